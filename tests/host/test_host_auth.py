"""OAuth for a host's servers: entries whose ``auth`` is of type ``oauth``
reach our protected server through a real authorization server
(oidc-provider), with dynamic registration or a pre-registered client, the
application's redirect step shared by every server and a token storage per
server; the tokens outlive a reconnection. Bad OAuth settings are
configuration errors naming the entry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.http_servers import ThreadedServer, run
from support.oidc_provider import (
    REDIRECT_URI,
    AuthorizationServer,
    User,
    authorization_server,
    register_client,
)
from support.protected import protected_by

from mcpbind.auth.client import CallbackRedirect, InMemoryTokenStorage
from mcpbind.host import ConfigError, Host, OAuthEntry, RetryPolicy, ServerConfig, parse_config
from mcpbind.host._authorization import HostAuthorization


@pytest.fixture(scope="module")
def issuer() -> Iterator[AuthorizationServer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def protected(issuer: AuthorizationServer) -> Iterator[ThreadedServer]:
    with protected_by(issuer) as served:
        yield served


def text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.node
def test_oauth_entries_reach_a_protected_server(
    protected: ThreadedServer, issuer: AuthorizationServer
) -> None:
    known = register_client(issuer)  # a public client the operator registered for the host
    user = User("judy")
    storages: dict[str, InMemoryTokenStorage] = {}

    def storage(server: ServerConfig) -> InMemoryTokenStorage:
        return storages.setdefault(server.name, InMemoryTokenStorage())

    config = parse_config(
        {
            "mcpServers": {
                "registers": {"url": protected.url(), "auth": {"type": "oauth"}},
                "known": {
                    "type": "http",
                    "url": protected.url(),
                    "auth": {"type": "oauth", "clientId": "${CLIENT}", "scopes": ["mcp:admin"]},
                },
                "plain": {
                    "url": protected.url(),
                    "connectTimeout": 5,
                },  # no auth: refused, the others unaffected
            }
        },
        {"CLIENT": known.client_id},
    )
    oauth = HostAuthorization(
        CallbackRedirect(REDIRECT_URI, user.consent), storage=storage, client_name="host tests"
    )

    async def go() -> None:
        async with Host(config, oauth=oauth, retry=RetryPolicy(max_attempts=1)) as host:
            states = {name: status.state for name, status in host.status().items()}
            assert states == {"registers": "ready", "known": "ready", "plain": "failed"}
            assert "401" in (host.status()["plain"].error or "")
            registers = json.loads(text(await host.call_tool("registers_whoami")))
            assert registers["subject"] == "judy" and registers["scopes"] == ["mcp:tools"]
            known_seen = json.loads(text(await host.call_tool("known_whoami")))
            # the pre-registered client, with the configured scope beside the one the server names
            assert known_seen["client_id"] == known.client_id and known_seen["scopes"] == [
                "mcp:admin",
                "mcp:tools",
            ]
            assert text(await host.call_tool("known_admin_reset")) == "reset"
            registered = await storages["registers"].get_client(issuer.issuer)
            assert (
                registered is not None
                and registered.client_id == registers["client_id"] != known.client_id
            )
        assert len(user.authorizations) == 2  # one per server
        # The application restarts with the same storage: no user interaction this time.
        async with Host(config, oauth=oauth, retry=RetryPolicy(max_attempts=1)) as host:
            assert json.loads(text(await host.call_tool("registers_whoami")))["subject"] == "judy"
            assert text(await host.call_tool("known_admin_reset")) == "reset"
        assert len(user.authorizations) == 2

    run(go())
    assert sorted(query["client_id"] == known.client_id for query in user.authorizations) == [
        False,
        True,
    ]
    known_query = next(
        query for query in user.authorizations if query["client_id"] == known.client_id
    )
    assert set(known_query["scope"].split()) == {"mcp:admin", "mcp:tools", "offline_access"}


def test_oauth_settings_are_checked() -> None:
    def entry(**fields: Any) -> dict[str, Any]:
        return {"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", **fields}}}

    parsed = parse_config(
        entry(auth={"type": "oauth", "clientId": "c", "clientSecret": "${S}", "scopes": ["a"]}),
        {"S": "x"},
    )
    assert parsed["s"].oauth == OAuthEntry(client_id="c", client_secret="x", scopes=("a",))
    assert "x" not in repr(parsed["s"].oauth)  # the secret stays out of logs
    assert parse_config(entry(auth={"type": "bearer"}))["s"].oauth is None  # for the authorize hook
    bad = [
        (
            entry(auth={"type": "oauth", "scope": "a"}),
            r"mcpServers.s.auth.scope: not an OAuth setting",
        ),
        (
            entry(auth={"type": "oauth", "scopes": "a b"}),
            r"mcpServers.s.auth.scopes: expected an array, got a string",
        ),
        (
            entry(auth={"type": "oauth", "scopes": [1]}),
            r"mcpServers.s.auth.scopes\[0\]: expected a string, got a number",
        ),
        (
            entry(auth={"type": "oauth", "clientSecret": "x"}),
            r"mcpServers.s.auth.clientSecret: a client secret needs its clientId",
        ),
        (
            {"mcpServers": {"s": {"command": "x", "auth": {"type": "oauth"}}}},
            r"mcpServers.s.auth: OAuth is for servers reached by URL, not stdio ones",
        ),
    ]
    for document, message in bad:
        with pytest.raises(ConfigError, match=message):
            parse_config(document)
    with pytest.raises(
        ConfigError,
        match=r"server 's' is authorized with OAuth: the Host needs oauth=HostAuthorization",
    ):
        Host(entry(auth={"type": "oauth"}))
