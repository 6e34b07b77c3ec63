"""A small MCP server protected as an OAuth resource server, for the
authorization tests: served over HTTP by uvicorn on loopback, with a
``ResourceServer`` made for the URL it is served at.

Its tools tell the caller who it is (``whoami``, the principal of the
request being handled), need more than the base scope (``admin_reset``,
whose scope the ResourceServer declares), or find out in the handler that
they do (``escalate`` raises InsufficientScope unless the caller has
``mcp:admin``); ``slow_whoami`` answers after a pause, so that requests of
different principals overlap on one session.

``python protected.py`` serves it over stdio, where no token is checked (MCP
authorization is for HTTP) and handlers see no principal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from typing_extensions import override

from mcpbind._server.server import Server
from mcpbind.auth._principal import InsufficientScope, Principal
from mcpbind.auth.server import JWTVerifier, ResourceServer
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind.serving import run_stdio
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

if (
    str(Path(__file__).resolve().parents[1]) not in sys.path
):  # run as a script: make `support` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.http_servers import ThreadedServer  # noqa: E402
from support.oidc_provider import AuthorizationServer  # noqa: E402

TOOLS = {
    "whoami": "The caller's principal, as JSON.",
    "slow_whoami": "The same, after a pause.",
    "admin_reset": "Needs mcp:admin, as the resource server declares.",
    "escalate": "Needs mcp:admin, as the handler finds out.",
}
ADMIN = "mcp:admin"
BASE = "mcp:tools"


def describe(principal: Principal | None) -> str:
    if principal is None:
        return json.dumps(None)
    return json.dumps(
        {
            "subject": principal.subject,
            "client_id": principal.client_id,
            "scopes": sorted(principal.scopes),
        }
    )


async def answer(name: str, ctx: RequestContext) -> str:
    """What tool ``name`` says (the same at every revision)."""
    if name == "slow_whoami":
        await asyncio.sleep(0.3)
    if name == "escalate":
        principal = ctx.principal
        if principal is None or not principal.has_scopes([ADMIN]):
            raise InsufficientScope([ADMIN])
    if name == "admin_reset":
        return "reset"
    return describe(ctx.principal)


class ModernHandlers(mcp.ServerHandlers):
    @override
    async def list_tools(
        self, params: mcp.PaginatedRequestParams, ctx: RequestContext
    ) -> mcp.ListToolsResult:
        tools = [
            mcp.Tool(name=n, description=d, input_schema=mcp.ToolInputSchema(type="object"))
            for n, d in TOOLS.items()
        ]
        return mcp.ListToolsResult(tools=tools, ttl_ms=0, cache_scope="private")

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult | mcp.InputRequiredResult:
        return mcp.CallToolResult(content=[mcp.TextContent(text=await answer(params.name, ctx))])


class LegacyHandlers(legacy.ServerHandlers):
    @override
    async def list_tools(
        self, params: legacy.PaginatedRequestParams, ctx: RequestContext
    ) -> legacy.ListToolsResult:
        tools = [
            legacy.Tool(name=n, description=d, input_schema=legacy.ToolInputSchema(type="object"))
            for n, d in TOOLS.items()
        ]
        return legacy.ListToolsResult(tools=tools)

    @override
    async def call_tool(
        self, params: legacy.CallToolRequestParams, ctx: RequestContext
    ) -> legacy.CallToolResult:
        return legacy.CallToolResult(
            content=[legacy.TextContent(text=await answer(params.name, ctx))]
        )


def protected_server() -> Server:
    return Server([LegacyHandlers(), ModernHandlers()], name="protected", version="1.0")


def resource_server(resource: str, issuer: str, verifier: Any, **options: Any) -> ResourceServer:
    """The ResourceServer of the tests: mcp:tools for everything, mcp:admin for admin_reset."""
    return ResourceServer(
        resource,
        [issuer],
        verifier,
        required_scopes=[BASE],
        scopes={("tools/call", "admin_reset"): [ADMIN]},
        **options,
    )


@contextlib.contextmanager
def serving_protected(
    make_auth: Callable[[str], ResourceServer], **app_options: Any
) -> Iterator[ThreadedServer]:
    """The protected server under uvicorn; ``make_auth`` gets the URL of its MCP endpoint."""
    served = ThreadedServer(None)
    served.app = served.recorder.app = http_app(
        protected_server(), auth=make_auth(served.url()), **app_options
    )
    served.start()
    try:
        yield served
    finally:
        served.stop()


@contextlib.contextmanager
def protected_by(
    issuer: AuthorizationServer, *, ttl: int = 300, leeway: int = 60, origin: bool = False
) -> Iterator[ThreadedServer]:
    """The protected server accepting the JWT access tokens of ``issuer``,
    where it is registered as a resource whose tokens live ``ttl`` seconds;
    with ``origin``, the resource is the server's origin, so that both /mcp
    and the legacy /sse endpoint belong to it."""

    def make(url: str) -> ResourceServer:
        resource = url.removesuffix("/mcp") if origin else url
        issuer.register_resource(resource, ttl=ttl)
        verifier = JWTVerifier(issuer.issuer, resource, token_type="at+jwt", leeway=leeway)
        return resource_server(resource, issuer.issuer, verifier)

    with serving_protected(make) as served:
        yield served


if __name__ == "__main__":
    run_stdio(protected_server())
