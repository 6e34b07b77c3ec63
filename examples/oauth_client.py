"""An MCP client for a protected server, as a command-line application would
be: the first request the server refuses starts OAuth (discovery, a client
ID, the browser on the authorization page, the code back on a loopback
port), then the tools are listed and the session goes on with the token.

``python examples/oauth_client.py https://mcp.example.com/mcp``

Tokens live in memory here: implement
``mcpbind.auth.client.TokenStorage`` to keep them between runs.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from mcpbind import (
    Client,
    ClientMetadata,
    LoopbackRedirect,
    McpError,
    OAuthClientProvider,
    connect_http,
)
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as modern


async def main(url: str) -> None:
    with LoopbackRedirect() as redirect:
        auth = OAuthClientProvider(
            url,
            client_metadata=ClientMetadata(client_name="mcp-codegen OAuth example"),
            redirect=redirect,
        )
        client = Client(name="mcp-codegen-oauth-example", version="0.1.0")
        async with connect_http(client, url, auth=auth) as session:
            print(f"connected: {session.protocol_version}")
            stub: Any = (
                modern.ClientStub(session) if session.stateless else legacy.ClientStub(session)
            )
            for tool in (await stub.list_tools()).tools:
                print(f"- {tool.name}: {tool.description or ''}")


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.WARNING
    )  # the authorization URL is logged when no browser opens
    if len(sys.argv) != 2:
        sys.exit("usage: oauth_client.py <MCP server URL>")
    try:
        asyncio.run(main(sys.argv[1]))
    except McpError as error:
        sys.exit(f"failed: {error.message}")
