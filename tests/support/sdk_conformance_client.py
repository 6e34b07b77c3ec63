"""The official Python SDK's client as a conformance-suite client, to set its figures beside ours.

Run by the suite as ``<python> sdk_conformance_client.py <server url>`` with
``MCP_CONFORMANCE_SCENARIO``, ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and (for some
scenarios) ``MCP_CONFORMANCE_CONTEXT`` set; exits 0 when the SDK got through.
It uses only the SDK (``mcp`` / ``mcp_types``) and its HTTP client (``httpx2``): where
the SDK has no way to do what a scenario asks (DPoP, workload identity), the
scenario runs the SDK's ordinary authorization-code flow and fails as the SDK
would, so the figures are the SDK's own.

    python tests/conformance.py --no-server --sdk-client
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
import mcp_types as types
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp.client.client import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AnyUrl

REDIRECT_URI = "http://localhost:3000/callback"
# The suite's authorization server accepts a URL client id (client ID metadata document).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
TIMEOUT = 30.0

Scenario = Callable[[str, dict[str, Any]], Coroutine[Any, Any, None]]


def _mode() -> str:
    """The SDK's connect mode for the revision the suite's server speaks: the
    initialize handshake for 2025-11-25, discovery for 2026-07-28."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    return "auto" if version is None or version in MODERN_PROTOCOL_VERSIONS else "legacy"


def _context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise SystemExit(f"MCP_CONFORMANCE_CONTEXT is not a JSON object: {raw[:80]}")
    return value


def _required(context: dict[str, Any], *keys: str) -> list[str]:
    missing = [key for key in keys if not isinstance(context.get(key), str)]
    if missing:
        raise SystemExit(f"MCP_CONFORMANCE_CONTEXT lacks {', '.join(missing)}")
    return [context[key] for key in keys]


class MemoryTokens(TokenStorage):
    """Tokens and client registration held for the one run."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class HeadlessBrowser:
    """Plays the user's browser: the suite's authorization server approves at once,
    so fetching the authorization URL yields the redirect carrying the code."""

    def __init__(self) -> None:
        self._result: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise RuntimeError(
                f"authorization endpoint answered {response.status_code} without a redirect"
            )
        query = parse_qs(urlparse(location).query)
        if "code" not in query:
            raise RuntimeError(f"redirect without a code: {location}")
        self._result = AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise RuntimeError("the callback came before the authorization redirect")
        return result


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=""), model="sdk-conformance"
    )


async def _roots(context: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


async def _accept_defaults(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    """Accept a form with each field's schema default (SEP-1034)."""
    content: dict[str, Any] = {}
    if isinstance(params, types.ElicitRequestFormParams):
        for name, schema in params.requested_schema.get("properties", {}).items():
            if "default" in schema:
                content[name] = schema["default"]
    return types.ElicitResult(action="accept", content=content)


async def _confirm(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirmed": True})


def _placeholder_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of the declared type for each required argument."""
    by_type: dict[str, Any] = {
        "string": "x",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "object": {},
        "array": [],
    }
    properties = schema.get("properties", {})
    return {
        name: by_type.get(properties.get(name, {}).get("type"), "x")
        for name in schema.get("required", [])
    }


async def initialize(url: str, context: dict[str, Any]) -> None:
    async with Client(url, mode=_mode()) as client:
        await client.list_tools()


async def tools_call(url: str, context: dict[str, Any]) -> None:
    async with Client(url, mode=_mode()) as client:
        await client.list_tools()
        await client.call_tool("add_numbers", {"a": 5, "b": 3})


async def sse_retry(url: str, context: dict[str, Any]) -> None:
    async with Client(url, mode=_mode()) as client:
        await client.list_tools()
        await client.call_tool("test_reconnection", {})


async def elicitation_defaults(url: str, context: dict[str, Any]) -> None:
    async with Client(url, mode=_mode(), elicitation_callback=_accept_defaults) as client:
        await client.list_tools()
        await client.call_tool("test_client_elicitation_defaults", {})


async def request_metadata(url: str, context: dict[str, Any]) -> None:
    # Every callback set, so every client capability is declared in each request's _meta.
    callbacks: dict[str, Any] = {
        "sampling_callback": _sample,
        "list_roots_callback": _roots,
        "elicitation_callback": _accept_defaults,
    }
    async with Client(url, mode=_mode(), **callbacks) as client:
        await client.list_tools()
        await client.call_tool("add_numbers", {"a": 5, "b": 3})


async def json_schema_ref(url: str, context: dict[str, Any]) -> None:
    # This scenario's server knows only the handshake whatever revision it is run at.
    async with Client(url, mode="legacy") as client:
        await client.list_tools()


async def json_schema_preservation(url: str, context: dict[str, Any]) -> None:
    async with Client(url, mode=_mode()) as client:
        listed = await client.list_tools()
        focal = next(tool for tool in listed.tools if tool.name == "json_schema_2020_12_tool")
        await client.call_tool("json_schema_echo", {"schema": focal.input_schema})


async def invalid_tool_headers(url: str, context: dict[str, Any]) -> None:
    """Call each tool the SDK lists: it should drop those with malformed x-mcp-header."""
    async with Client(url, mode=_mode()) as client:
        for tool in (await client.list_tools()).tools:
            try:
                await client.call_tool(tool.name, _placeholder_arguments(tool.input_schema))
            except (
                Exception
            ) as error:  # the scenario tolerates a failed call; carry on with the next
                print(f"{tool.name}: {error!r}", file=sys.stderr)


async def custom_headers(url: str, context: dict[str, Any]) -> None:
    """Make the calls the suite lists, so parameters are mirrored into Mcp-Param-* headers."""
    async with Client(url, mode=_mode()) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        for call in context.get("toolCalls", []):
            if call["name"] not in listed:
                continue
            try:
                await client.call_tool(call["name"], call.get("arguments") or {})
            except Exception as error:  # as above
                print(f"{call['name']}: {error!r}", file=sys.stderr)


async def request_state(url: str, context: dict[str, Any]) -> None:
    """The SDK's own retry loop for input-required results (SEP-2322)."""
    async with Client(url, mode=_mode(), elicitation_callback=_confirm) as client:
        await client.list_tools()
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ):
            await client.call_tool(name, {})


async def _authorized_session(url: str, auth: httpx2.Auth) -> None:
    """Connect through ``auth``, list the tools and call the first one."""
    async with httpx2.AsyncClient(auth=auth, timeout=TIMEOUT) as http:
        transport = streamable_http_client(url=url, http_client=http)
        async with Client(transport, mode=_mode(), elicitation_callback=_accept_defaults) as client:
            tools = (await client.list_tools()).tools
            if tools:
                try:
                    await client.call_tool(tools[0].name, {})
                except Exception as error:  # some auth scenarios' tools reject empty arguments
                    print(f"{tools[0].name}: {error!r}", file=sys.stderr)


async def authorization_code(url: str, context: dict[str, Any]) -> None:
    storage = MemoryTokens()
    client_id, client_secret = context.get("client_id"), context.get("client_secret")
    if isinstance(client_id, str):  # pre-registered by the scenario
        storage.client_info = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=client_secret,
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            token_endpoint_auth_method="client_secret_basic" if client_secret else "none",
        )
    browser = HeadlessBrowser()
    metadata = OAuthClientMetadata(
        client_name="sdk-conformance",
        redirect_uris=[AnyUrl(REDIRECT_URI)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
        client_metadata_url=CLIENT_METADATA_URL,
    )
    await _authorized_session(url, auth)


async def client_secret_basic(url: str, context: dict[str, Any]) -> None:
    client_id, client_secret = _required(context, "client_id", "client_secret")
    auth = ClientCredentialsOAuthProvider(
        server_url=url, storage=MemoryTokens(), client_id=client_id, client_secret=client_secret
    )
    await _authorized_session(url, auth)


async def private_key_jwt(url: str, context: dict[str, Any]) -> None:
    client_id, key = _required(context, "client_id", "private_key_pem")
    signer = SignedJWTParameters(
        issuer=client_id,
        subject=client_id,
        signing_key=key,
        signing_algorithm=context.get("signing_algorithm", "ES256"),
    )
    auth = PrivateKeyJWTOAuthProvider(
        server_url=url,
        storage=MemoryTokens(),
        client_id=client_id,
        assertion_provider=signer.create_assertion_provider(),
    )
    await _authorized_session(url, auth)


async def enterprise_managed(url: str, context: dict[str, Any]) -> None:
    """SEP-990: an ID-JAG from the enterprise IdP (token exchange), then the SDK's jwt-bearer grant."""
    client_id, client_secret, idp_client_id, id_token, idp_token_endpoint = _required(
        context, "client_id", "client_secret", "idp_client_id", "idp_id_token", "idp_token_endpoint"
    )
    # The SDK takes the authorization server's issuer as configuration; the suite
    # publishes it only in the resource's protected-resource metadata.
    metadata_url = build_protected_resource_metadata_discovery_urls(None, url)[0]
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        issuer = (
            (await http.get(metadata_url)).raise_for_status().json()["authorization_servers"][0]
        )

    async def id_jag(audience: str, resource: str) -> str:
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token": id_token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": audience,
            "resource": resource,
            "client_id": idp_client_id,
        }
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            token: str = (
                (await http.post(idp_token_endpoint, data=form))
                .raise_for_status()
                .json()["access_token"]
            )
        return token

    auth = IdentityAssertionOAuthProvider(
        server_url=url,
        storage=MemoryTokens(),
        client_id=client_id,
        client_secret=client_secret,
        issuer=issuer,
        assertion_provider=id_jag,
        token_endpoint_auth_method="client_secret_basic",
    )
    await _authorized_session(url, auth)


SCENARIOS: dict[str, Scenario] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "sse-retry": sse_retry,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "request-metadata": request_metadata,
    "http-standard-headers": tools_call,
    "http-invalid-tool-headers": invalid_tool_headers,
    "http-custom-headers": custom_headers,
    "json-schema-ref-no-deref": json_schema_ref,
    "json-schema-2020-12-preservation": json_schema_preservation,
    "sep-2322-client-request-state": request_state,
    "auth/client-credentials-basic": client_secret_basic,
    "auth/client-credentials-jwt": private_key_jwt,
    "auth/enterprise-managed-authorization": enterprise_managed,
}


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(
            f"usage: {sys.argv[0]} <server url>  (MCP_CONFORMANCE_SCENARIO names the scenario)"
        )
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(scenario) or (authorization_code if scenario.startswith("auth/") else None)
    if run is None:
        raise SystemExit(f"unknown scenario: {scenario!r}")
    asyncio.run(run(sys.argv[1], _context()))


if __name__ == "__main__":
    main()
