"""Policy at the gateway: the app's middleware around proxied calls, the front's
OAuth resource server with scopes per backend tool (against the real
authorization server of the tests), and backend credentials absent from every
answer the front gets and every log line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.bearer import MODERN, HandshakeSession, LegacySession, auth, messages, tool_text
from support.everything_http import free_port
from support.gateway import gateway_config, gateway_over_http, ts_scenario
from support.http_servers import ThreadedServer
from support.oidc_provider import (
    AuthorizationServer,
    authorization_server,
    authorize,
    register_client,
)
from support.peers import (
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)
from support.rawstdio import RawServer

from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import RATE_LIMITED, App, Call, Next, RateLimit
from mcpbind.auth.server import JWTVerifier, ResourceServer
from mcpbind_protocol import v2025_11_25 as legacy

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

SHIFTING = SUPPORT / "shifting_server.py"
PROTECTED = SUPPORT / "protected.py"
SECRETS = ("env-s3cr3t-0d1e", "hdr-s3cr3t-7a2b", "key-s3cr3t-9c4f")


def stdio(script: Path) -> StdioServerParameters:
    return StdioServerParameters(
        sys.executable, [str(script)], env=THIS_TREE, stderr=asyncio.subprocess.DEVNULL
    )


def test_the_apps_middleware_runs_around_proxied_calls() -> None:
    seen: list[tuple[str, str | None]] = []

    async def recording(call: Call, call_next: Next) -> Any:
        seen.append((call.method, call.name))
        return await call_next(call)

    app = App("gateway", middleware=[recording, RateLimit(2, per=3600, methods=["tools/call"])])
    app.proxy(stdio(SHIFTING), prefix="shifting")

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            stub = legacy.ClientStub(session)
            for text in ("one", "two"):
                await stub.call_tool("shifting_stable", arguments={"text": text})
            with pytest.raises(McpError) as limited:
                await stub.call_tool("shifting_stable", arguments={"text": "three"})
            assert limited.value.code == RATE_LIMITED
            assert limited.value.data["retryAfterSeconds"] > 0

    run(main())
    assert seen.count(("tools/call", "shifting_stable")) == 3


def raw_call(url: str, token: str | None, tool: str) -> httpx.Response:
    """A 2026-07-28 tools/call of ``tool`` without arguments, on its own."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
        **auth(token),
    }
    return httpx.post(url, json=body, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.mark.node
def test_the_gateway_behind_oauth_asks_for_the_scopes_of_each_backend_tool(
    issuer: AuthorizationServer,
) -> None:
    served = ThreadedServer(None)
    url = served.url()
    issuer.register_resource(url)
    app = App("gateway")

    @app.tool()
    def ping() -> str:
        return "pong"

    @app.tool(scopes=["mcp:admin"])
    def own_admin() -> str:
        return "own"

    app.proxy(stdio(PROTECTED), prefix="p", scopes={"admin_*": ["mcp:admin"]})
    resource_server = ResourceServer(
        url,
        [issuer.issuer],
        JWTVerifier(issuer.issuer, url, token_type="at+jwt"),
        required_scopes=["mcp:tools"],
    )
    served.app = served.recorder.app = app.asgi(auth=resource_server)
    served.start()
    try:
        assert raw_call(url, None, "p_whoami").status_code == 401
        tools = authorize(issuer, register_client(issuer), url, scope="mcp:tools").access_token
        answer = raw_call(url, tools, "p_whoami")
        assert answer.status_code == 200
        assert messages(answer)[-1]["result"]["content"][0]["text"] == "null"  # stdio: no token
        refused = raw_call(url, tools, "p_admin_reset")
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and "mcp:admin" in challenge
        admin = authorize(
            issuer, register_client(issuer), url, scope="mcp:tools mcp:admin"
        ).access_token
        allowed = raw_call(url, admin, "p_admin_reset")
        assert messages(allowed)[-1]["result"]["content"][0]["text"] == "reset"
        # In a handshake session too, for the app's own tool as for a proxied one.
        run(refused_in_a_handshake_session(url, tools, ["own_admin", "p_admin_reset"]))
    finally:
        served.stop()


async def refused_in_a_handshake_session(url: str, token: str, tools: list[str]) -> None:
    session = HandshakeSession(url, token)
    try:
        assert (await session.open()).status_code == 200
        assert tool_text(await session.call("ping")) == "pong"
        for tool in tools:
            refused = await session.call(tool)
            assert refused.status_code == 403, (tool, refused.status_code, refused.text)
            challenge = refused.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge and "mcp:admin" in challenge
    finally:
        await session.close()


@pytest.mark.node
def test_mcpx_serve_behind_oauth_asks_for_each_backend_tools_scopes_from_its_config(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    """The command line's resource server in front of the catalogue the backends
    fill after the server is built: an entry's ``scopes`` guard its tools."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    issuer.register_resource(url)
    entry = {
        "command": sys.executable,
        "args": [str(PROTECTED)],
        "env": THIS_TREE,
        "scopes": {"admin_*": ["mcp:admin"]},
    }
    config = gateway_config(tmp_path / "gateway.json", {"p": entry})
    options = ("--auth-issuer", issuer.issuer, "--resource", url, "--required-scope", "mcp:tools")

    async def listed(token: str) -> set[str]:
        session = HandshakeSession(url, token)
        try:
            assert (await session.open()).status_code == 200
            answer = messages(await session.post("tools/list", {}))[-1]
            return {tool["name"] for tool in answer["result"]["tools"]}
        finally:
            await session.close()

    with gateway_over_http(config, *options, port=port) as served:
        assert served == url
        assert raw_call(url, None, "p_whoami").status_code == 401
        tools = authorize(issuer, register_client(issuer), url, scope="mcp:tools").access_token
        assert {"p_whoami", "p_admin_reset"} <= run(listed(tools))
        assert tool_text(raw_call(url, tools, "p_whoami")) == "null"  # stdio backend: no token
        refused = raw_call(url, tools, "p_admin_reset")
        assert refused.status_code == 403
        challenge = refused.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge and "mcp:admin" in challenge
        admin = authorize(
            issuer, register_client(issuer), url, scope="mcp:tools mcp:admin"
        ).access_token
        assert tool_text(raw_call(url, admin, "p_admin_reset")) == "reset"


@pytest.mark.node
def test_a_handshake_session_gets_403_for_a_backend_tool_whose_scope_its_token_lacks(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    """A token without a tool's scope: "Clients SHOULD respond to 403 Forbidden
    with error="insufficient_scope" by requesting a new authorization with the
    required scopes" (specification 2025-11-25, basic/authorization, Scope
    Challenge Handling). The tool, and so the scopes it needs, are known from
    the POST before any SSE stream opens: a 2025-11-25 session gets the 403 and
    its WWW-Authenticate challenge, not a 200 stream carrying -32003."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    issuer.register_resource(url)
    entry = {
        "command": sys.executable,
        "args": [str(PROTECTED)],
        "env": THIS_TREE,
        "scopes": {"admin_*": ["mcp:admin"]},
    }
    config = gateway_config(tmp_path / "gateway.json", {"p": entry})
    options = ("--auth-issuer", issuer.issuer, "--resource", url, "--required-scope", "mcp:tools")

    async def main(tools: str, admin: str) -> None:
        session = HandshakeSession(url, tools)
        try:
            assert (await session.open()).status_code == 200
            assert tool_text(await session.call("p_whoami")) == "null"  # stdio backend: no token
            refused = await session.call("p_admin_reset")
            assert refused.status_code == 403, (refused.status_code, refused.text)
            challenge = refused.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge and "mcp:admin" in challenge
            # The session goes on with the stepped-up token.
            assert tool_text(await session.call("p_admin_reset", token=admin)) == "reset"
        finally:
            await session.close()

    with gateway_over_http(config, *options, port=port) as served:
        assert served == url
        tools = authorize(issuer, register_client(issuer), url, scope="mcp:tools").access_token
        admin = authorize(
            issuer, register_client(issuer), url, scope="mcp:tools mcp:admin"
        ).access_token
        run(main(tools, admin))


@pytest.mark.node
@pytest.mark.peers
def test_the_typescript_client_gets_403_for_a_backend_tool_whose_scope_its_token_lacks(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    """A token without a tool's scope: "Clients SHOULD respond to 403 Forbidden
    with error="insufficient_scope" by requesting a new authorization with the
    required scopes" (specification 2025-11-25, basic/authorization, Scope
    Challenge Handling). The official TypeScript SDK client, at 2025-11-25 with
    the token in its request headers, calls a tool it may call, then one whose
    scope it lacks: ``mcpx serve --http`` answers that POST 403 with the
    insufficient_scope challenge, and the SDK raises the status."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    issuer.register_resource(url)
    entry = {
        "command": sys.executable,
        "args": [str(PROTECTED)],
        "env": THIS_TREE,
        "scopes": {"admin_*": ["mcp:admin"]},
    }
    config = gateway_config(tmp_path / "gateway.json", {"p": entry})
    options = ("--auth-issuer", issuer.issuer, "--resource", url, "--required-scope", "mcp:tools")
    with gateway_over_http(config, *options, port=port) as served:
        assert served == url
        tools = authorize(issuer, register_client(issuer), url, scope="mcp:tools").access_token
        seen = ts_scenario("scope", [url], token=tools)
    assert seen["protocolVersion"] == "2025-11-25", seen
    assert seen["whoami"] == "null", seen  # stdio backend: no token
    [refused] = seen["refused"]
    assert refused["status"] == 403, seen
    assert 'error="insufficient_scope"' in refused["challenge"], refused
    assert "mcp:admin" in refused["challenge"], refused
    error = seen["error"]
    assert error is not None and error["name"] == "StreamableHTTPError", seen
    assert error["code"] == 403, error


class Recording(RawServer):
    """The gateway process, every line it writes to its client kept."""

    received: list[bytes]

    async def receive_line(self, timeout: float = 10.0) -> bytes:
        line = await super().receive_line(timeout)
        self.received.append(line)
        return line


@pytest.mark.peers
def test_backend_credentials_are_in_no_answer_to_the_front_and_no_log_line(
    tmp_path: Path,
) -> None:
    env_secret, header_secret, key_secret = SECRETS
    sys.path.insert(0, str(SUPPORT))
    import shifting_server  # the same app, served over HTTP in this process

    backend = ThreadedServer(shifting_server.app.asgi()).start()
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {
                        "command": sys.executable,
                        "args": [str(SHIFTING)],
                        "env": {**THIS_TREE, "GATEWAY_SECRET": env_secret},
                    },
                    "remote": {
                        "url": backend.url(),
                        "headers": {
                            "Authorization": f"Bearer {header_secret}",
                            "X-Api-Key": key_secret,
                        },
                    },
                }
            }
        )
    )
    trail, logs = tmp_path / "audit.jsonl", tmp_path / "stderr.log"
    command = [
        sys.executable,
        "-m",
        "mcpbind.cli",
        "serve",
        str(config),
        "--audit",
        str(trail),
        "--audit-arguments",
    ]

    async def main() -> None:
        with logs.open("wb") as stderr:
            gateway = Recording(
                await asyncio.create_subprocess_exec(
                    *command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=stderr,
                    env={**THIS_TREE, "PATH": "/usr/bin:/bin", "MCP_LOG_LEVEL": "debug"},
                )
            )
            gateway.received = []
            await gateway.initialize(request_id=0)
            listed = await gateway.request(1, "tools/list")
            names = {tool["name"] for tool in listed["result"]["tools"]}
            assert {"local_stable", "remote_stable"} <= names
            requests: list[tuple[str, dict[str, Any]]] = [
                ("tools/call", {"name": "local_stable", "arguments": {"text": "a"}}),
                ("tools/call", {"name": "remote_stable", "arguments": {"text": "b"}}),
                ("tools/call", {"name": "remote_convert", "arguments": {}}),
                ("tools/call", {"name": "remote_missing", "arguments": {}}),
                ("prompts/list", {}),
                ("prompts/get", {"name": "remote_greet", "arguments": {"name": "Ada"}}),
                ("prompts/get", {"name": "remote_greet", "arguments": {}}),
            ]
            for number, (method, params) in enumerate(requests, start=2):
                await gateway.request(number, method, params)
            assert await gateway.close() == 0
        received = b"".join(gateway.received).decode()
        assert '"remote_stable"' in received and "stable: b" in received
        assert len(trail.read_text().splitlines()) == 5  # the proxied calls and gets
        for secret in SECRETS:
            assert secret not in received
            assert secret not in logs.read_text()
            assert secret not in trail.read_text()

    try:
        run(main())
        # The backend was sent the credentials: they were used, only never shown.
        sent = backend.recorder.matching("POST", "x-api-key")
        assert sent and sent[0]["authorization"] == f"Bearer {header_secret}"
    finally:
        backend.stop()
        sys.path.remove(str(SUPPORT))


def test_a_gateway_entry_with_malformed_scopes_is_refused_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    entry = {"command": sys.executable, "args": [str(SHIFTING)], "scopes": "mcp:admin"}
    config.write_text(json.dumps({"mcpServers": {"local": entry}}))
    answer = subprocess.run(
        [sys.executable, "-m", "mcpbind.cli", "serve", str(config)],
        env={**THIS_TREE, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.returncode == 2
    assert answer.stderr.strip().splitlines()[-1] == (
        f"mcpx: error: {config}: server 'local': scopes is a list of scopes, "
        "or an object of tool patterns and lists of scopes"
    )


@pytest.mark.node
def test_a_legacy_sse_post_through_the_gateway_gets_403_for_a_backend_tool_whose_scope_it_lacks(
    issuer: AuthorizationServer, tmp_path: Path
) -> None:
    """2024-11-05 defines no authorization; 2025-03-26's, the first revision to
    define it (for "Implementations using an HTTP-based transport"), says
    "Servers MUST return appropriate HTTP status codes for authorization
    errors", "403 | Forbidden | Invalid scopes or insufficient permissions"
    (basic/authorization, Error Handling). A legacy POST carries the token and
    is answered before its message is served: a backend tool an entry's
    ``scopes`` guard gets the 403 and its challenge there, not a 202 and
    -32003 down the stream."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    issuer.register_resource(url)
    entry = {
        "command": sys.executable,
        "args": [str(PROTECTED)],
        "env": THIS_TREE,
        "scopes": {"admin_*": ["mcp:admin"]},
    }
    config = gateway_config(tmp_path / "gateway.json", {"p": entry})
    options = ("--auth-issuer", issuer.issuer, "--resource", url, "--required-scope", "mcp:tools")

    async def main(tools: str, admin: str) -> None:
        async with LegacySession(f"http://127.0.0.1:{port}", tools).opened() as session:
            assert (await session.call(1, "p_whoami")).status_code == 202
            assert (await session.answer(1))["result"]["content"][0]["text"] == "null"
            refused = await session.call(2, "p_admin_reset")
            assert refused.status_code == 403, (refused.status_code, refused.text)
            challenge = refused.headers["www-authenticate"]
            assert 'error="insufficient_scope"' in challenge and "mcp:admin" in challenge
            # The session goes on with the stepped-up token.
            assert (await session.call(3, "p_admin_reset", admin)).status_code == 202
            assert (await session.answer(3))["result"]["content"][0]["text"] == "reset"

    with gateway_over_http(config, *options, port=port) as served:
        assert served == url
        tools = authorize(issuer, register_client(issuer), url, scope="mcp:tools").access_token
        admin = authorize(
            issuer, register_client(issuer), url, scope="mcp:tools mcp:admin"
        ).access_token
        run(main(tools, admin))
