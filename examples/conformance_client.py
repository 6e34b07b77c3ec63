"""The client the official conformance suite drives for its client scenarios.

The suite runs ``python examples/conformance_client.py <server-url>`` with the
scenario's name in ``MCP_CONFORMANCE_SCENARIO``, the wire it tests in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some scenarios, the calls to make
in ``MCP_CONFORMANCE_CONTEXT`` (JSON: ``{"toolCalls": [{"name", "arguments"}]}``).

At 2025-11-25 (initialize, tools_call, elicitation-sep1034-client-defaults,
sse-retry) the client starts with the initialize handshake; at 2026-07-28
(tools_call, request-metadata, sep-2322-client-request-state,
http-standard-headers, http-custom-headers, http-invalid-tool-headers,
json-schema-ref-no-deref) every request describes the client in ``_meta``.
Either way it connects over Streamable HTTP with the runtime's client, lists
the tools and calls each one (with the arguments the context gives, if any;
json-schema-ref-no-deref only lists them; json-schema-2020-12-preservation
sends the schema of its focal tool back through its echo tool, as received);
for http-standard-headers it also reads every resource and gets every prompt. At 2026-07-28 it asks only for
what the server declared in server/discover.
Elicitations are accepted with the defaults of the requested schema filled in
(SEP-1034), sampling answers with a fixed text, and the client has no roots.

The ``auth/*`` scenarios put the server behind an authorization server: the
client authorizes with an OAuthClientProvider whose redirect step follows the
test authorization server's redirect (it needs no user), offering a client ID
metadata document URL and, when the context has ``client_id`` (and
``client_secret``), those pre-registered credentials, and DPoP-bound tokens
where the authorization server offers them; the client credentials
scenarios use a ClientCredentialsProvider with the context's secret or
private key (``private_key_pem``, ``signing_algorithm``); workload identity
federation a JWTBearerProvider with the context's ``valid_jwt``;
enterprise-managed authorization the same grant with an ID-JAG exchanged for
the context's ``idp_id_token`` at ``idp_token_endpoint``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

import httpx2
from typing_extensions import override

from mcpbind import (
    Client,
    ClientCredentialsProvider,
    ClientMetadata,
    ClientSession,
    JWTBearerProvider,
    OAuthClientProvider,
    RequestContext,
    connect_streamable_http,
)
from mcpbind._core.lifecycle import has_capability
from mcpbind.auth.client import (
    HTTPRedirectFollower,
    IdentityAssertionExchange,
    PreRegisteredClient,
)
from mcpbind.codec import UNSET, encode
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 1, "b": 2}}
MODERN = "2026-07-28"
# The client ID metadata document URL the suite expects (it never fetches it).
# json-schema-2020-12-preservation: the focal tool's schema goes back through the echo tool.
SCHEMA_TOOL, SCHEMA_ECHO = "json_schema_2020_12_tool", "json_schema_echo"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"


def _defaults(properties: dict[str, Any]) -> dict[str, Any]:
    """The default of every field of a requested schema that has one (SEP-1034)."""
    content: dict[str, Any] = {}
    for name, schema in properties.items():
        default = getattr(schema, "default", UNSET)
        if default is not UNSET and default is not None:
            content[name] = default
    return content


class LegacyClient(legacy.ClientHandlers):
    """What the client answers on the handshake wire: elicitation only."""

    @override
    async def elicit(
        self, params: legacy.ElicitRequestParams, ctx: RequestContext
    ) -> legacy.ElicitResult:
        if not isinstance(params, legacy.ElicitRequestFormParams):
            return legacy.ElicitResult(action="decline")
        return legacy.ElicitResult(
            action="accept", content=_defaults(params.requested_schema.properties)
        )


class ModernClient(mcp.ClientHandlers):
    """What the client answers when a 2026-07-28 server asks for input."""

    @override
    async def elicit(
        self, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        if not isinstance(params, mcp.ElicitRequestFormParams):
            return mcp.ElicitResult(action="decline")
        return mcp.ElicitResult(
            action="accept", content=_defaults(params.requested_schema.properties)
        )

    @override
    async def create_message(
        self, params: mcp.CreateMessageRequestParams, ctx: RequestContext
    ) -> mcp.CreateMessageResult:
        return mcp.CreateMessageResult(
            role="assistant",
            content=mcp.TextContent(text="A sampled answer."),
            model="conformance-client",
        )

    @override
    async def list_roots(
        self, params: mcp.ListRootsRequestParams, ctx: RequestContext
    ) -> mcp.ListRootsResult:
        return mcp.ListRootsResult(roots=[])


def _planned_calls(context: dict[str, Any]) -> dict[str, dict[str, Any]]:
    calls = context.get("toolCalls")
    if not isinstance(calls, list):
        return {}
    return {
        call["name"]: call.get("arguments") or {}
        for call in calls
        if isinstance(call, dict) and isinstance(call.get("name"), str)
    }


def auth_for(url: str, scenario: str, context: dict[str, Any]) -> httpx2.Auth | None:
    """The authorization an ``auth/*`` scenario needs (None for the others)."""
    if not scenario.startswith("auth/"):
        return None
    client_id = context.get("client_id")
    if scenario.startswith("auth/client-credentials") and isinstance(client_id, str):
        if isinstance(context.get("private_key_pem"), str):
            algorithm = context.get("signing_algorithm")
            return ClientCredentialsProvider(
                url,
                client_id=client_id,
                private_key=context["private_key_pem"],
                signing_algorithm=algorithm if isinstance(algorithm, str) else "ES256",
            )
        return ClientCredentialsProvider(
            url, client_id=client_id, client_secret=str(context.get("client_secret", ""))
        )
    secret = context.get("client_secret")
    if scenario == "auth/wif-jwt-bearer" and isinstance(client_id, str):
        return JWTBearerProvider(
            url, assertion=str(context.get("valid_jwt", "")), client_id=client_id
        )
    if scenario == "auth/enterprise-managed-authorization" and isinstance(client_id, str):
        exchange = IdentityAssertionExchange(
            token_endpoint=str(context.get("idp_token_endpoint", "")),
            id_token=str(context.get("idp_id_token", "")),
            client_id=str(context.get("idp_client_id", "")),
        )
        return JWTBearerProvider(
            url,
            assertion=exchange,
            client_id=client_id,
            client_secret=secret if isinstance(secret, str) else None,
        )
    return OAuthClientProvider(
        url,
        client_metadata=ClientMetadata(client_name="mcp-codegen-conformance-client"),
        redirect=HTTPRedirectFollower(REDIRECT_URI),
        client_metadata_url=CLIENT_METADATA_URL,
        dpop=True,  # used where the authorization server offers it
        pre_registered=(
            PreRegisteredClient(client_id, secret if isinstance(secret, str) else None)
            if isinstance(client_id, str)
            else None
        ),
    )


async def run_legacy(url: str, scenario: str, context: dict[str, Any]) -> None:
    client = Client(name="mcp-codegen-conformance-client", version="0.1.0", handlers=LegacyClient())
    async with connect_streamable_http(
        client, url, auth=auth_for(url, scenario, context)
    ) as session:
        server = legacy.ClientStub(session)
        if scenario == "initialize":
            return
        tools = await server.list_tools()
        if scenario == "json-schema-2020-12-preservation":
            schema = next(
                json.loads(encode(t.input_schema)) for t in tools.tools if t.name == SCHEMA_TOOL
            )
            await server.call_tool(SCHEMA_ECHO, arguments={"schema": schema}, timeout=30)
            return
        for tool in tools.tools:
            await server.call_tool(tool.name, arguments=ARGUMENTS.get(tool.name, {}), timeout=30)


async def run_modern(url: str, scenario: str, context: dict[str, Any]) -> None:
    client = Client(
        name="mcp-codegen-conformance-client",
        version="0.1.0",
        handlers=ModernClient(),
        protocol_version=MODERN,
    )
    async with connect_streamable_http(
        client, url, auth=auth_for(url, scenario, context)
    ) as session:
        await exercise(session, scenario, _planned_calls(context))


async def exercise(
    session: ClientSession, scenario: str, planned: dict[str, dict[str, Any]]
) -> None:
    server = mcp.ClientStub(session)
    offered = session.server_capabilities
    if has_capability(offered, ("tools",)):
        tools = await server.list_tools()
        if scenario == "json-schema-ref-no-deref":
            return  # the scenario's server answers tools/list only
        if scenario == "json-schema-2020-12-preservation":
            schema = next(
                json.loads(encode(t.input_schema)) for t in tools.tools if t.name == SCHEMA_TOOL
            )
            await server.call_tool(SCHEMA_ECHO, arguments={"schema": schema}, timeout=30)
            return
        for tool in tools.tools:
            if planned and tool.name not in planned:
                continue
            arguments = planned.get(tool.name) or ARGUMENTS.get(tool.name, {})
            await server.call_tool(tool.name, arguments=arguments, timeout=30)
    if scenario != "http-standard-headers":
        return
    if has_capability(offered, ("resources",)):
        resources = await server.list_resources()
        for resource in resources.resources:
            await server.read_resource(resource.uri, timeout=30)
    if has_capability(offered, ("prompts",)):
        prompts = await server.list_prompts()
        for prompt in prompts.prompts:
            await server.get_prompt(prompt.name, timeout=30)


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if not isinstance(context, dict):
        context = {}
    if version >= MODERN:
        asyncio.run(run_modern(url, scenario, context))
    else:
        asyncio.run(run_legacy(url, scenario, context))


if __name__ == "__main__":
    main()
