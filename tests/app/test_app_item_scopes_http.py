"""An app's items' own scopes over HTTP, against the real authorization server
of the tests: a token lacking the scopes of the resource template a
``resources/read`` matches, or of the tool a legacy HTTP+SSE POST calls, gets
the 403 and its challenge at the POST, before any answer starts."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from support.bearer import HandshakeSession, LegacySession, challenge, messages
from support.everything_http import free_port
from support.http_servers import run, serving
from support.oidc_provider import (
    AuthorizationServer,
    authorization_server,
    authorize,
    register_client,
)

from mcpbind.app import App
from mcpbind.auth.server import JWTVerifier, ResourceServer

BASE = "mcp:tools"
ADMIN = "mcp:admin"


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


def scoped_app() -> App:
    app = App("scoped")

    @app.tool()
    def ping() -> str:
        return "pong"

    @app.tool(scopes=[ADMIN])
    def admin_reset() -> str:
        return "reset"

    @app.resource("notes://{name}", scopes=[ADMIN])
    def note(name: str) -> str:
        return f"note {name}"

    return app


def tokens(issuer: AuthorizationServer, url: str) -> tuple[str, str]:
    """A token with the base scope only, and one with the admin scope too (same user)."""
    basic = authorize(issuer, register_client(issuer), url, scope=BASE).access_token
    admin = authorize(issuer, register_client(issuer), url, scope=f"{BASE} {ADMIN}")
    return basic, admin.access_token


def resource_server(issuer: AuthorizationServer, url: str) -> ResourceServer:
    issuer.register_resource(url)
    return ResourceServer(
        url,
        [issuer.issuer],
        JWTVerifier(issuer.issuer, url, token_type="at+jwt"),
        required_scopes=[BASE],
    )


def read_text(response: httpx.Response) -> str:
    found = [m for m in messages(response) if "result" in m or "error" in m]
    assert found and "result" in found[-1], (response.status_code, response.text)
    return str(found[-1]["result"]["contents"][0]["text"])


@pytest.mark.node
def test_a_handshake_session_gets_403_for_a_template_whose_scope_its_token_lacks(
    issuer: AuthorizationServer,
) -> None:
    """ "Clients SHOULD respond to 403 Forbidden with error="insufficient_scope"
    by requesting a new authorization with the required scopes" (specification
    2025-11-25, basic/authorization, Scope Challenge Handling). The template a
    URI matches is known from the POST, as an exact resource is: a 2025-11-25
    session gets the 403 and its challenge, not a 200 stream carrying -32003."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    app = scoped_app()

    async def main(basic: str, admin: str) -> None:
        session = HandshakeSession(url, basic)
        try:
            assert (await session.open()).status_code == 200
            read = {"uri": "notes://plans"}
            refused = await session.post("resources/read", read)
            assert refused.status_code == 403, (refused.status_code, refused.text)
            params = challenge(refused)
            assert params["error"] == "insufficient_scope"
            assert params["scope"] == f"{ADMIN} {BASE}"
            # The session goes on with the stepped-up token.
            allowed = await session.post("resources/read", read, token=admin)
            assert read_text(allowed) == "note plans"
        finally:
            await session.close()

    with serving(app.asgi(auth=resource_server(issuer, url)), port=port):
        run(main(*tokens(issuer, url)))


@pytest.mark.node
def test_a_legacy_sse_post_gets_403_for_a_tool_whose_scope_its_token_lacks(
    issuer: AuthorizationServer,
) -> None:
    """2024-11-05 defines no authorization; what applies is 2025-03-26's, the
    first revision to define it (for "Implementations using an HTTP-based
    transport"): "Servers MUST return appropriate HTTP status codes for authorization errors", "403 |
    Forbidden | Invalid scopes or insufficient permissions" (basic/authorization,
    Error Handling), with the challenge of RFC 6750 3.1 ("insufficient_scope ...
    SHOULD respond with the HTTP 403 (Forbidden) status code"). Each legacy POST
    carries the token and is answered on its own, before its message is served:
    the tool it calls, and so the scopes it needs, are known there, so the 403
    and its challenge come at the POST, not a 202 and -32003 down the stream."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    base = f"http://127.0.0.1:{port}"
    app = scoped_app()

    async def main(basic: str, admin: str) -> None:
        async with LegacySession(base, basic).opened() as session:
            assert (await session.call(1, "ping")).status_code == 202
            assert (await session.answer(1))["result"]["content"][0]["text"] == "pong"
            refused = await session.call(2, "admin_reset")
            assert refused.status_code == 403, (refused.status_code, refused.text)
            params = challenge(refused)
            assert params["error"] == "insufficient_scope"
            assert params["scope"] == f"{ADMIN} {BASE}"
            # A template a read matches, as a tool: known at the POST too.
            read = {"id": 3, "method": "resources/read", "params": {"uri": "notes://x"}}
            assert (await session.post(read)).status_code == 403
            # The session goes on, and the stepped-up token is served.
            assert (await session.call(4, "admin_reset", admin)).status_code == 202
            assert (await session.answer(4))["result"]["content"][0]["text"] == "reset"

    with serving(app.asgi(auth=resource_server(issuer, url)), port=port):
        run(main(*tokens(issuer, url)))
