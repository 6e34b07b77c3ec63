"""An MCP Apps server written with the app layer (tests/support/ui_server.py),
hosted by the official reference: the official Python SDK client, over stdio
and Streamable HTTP, at 2025-11-25 (initialize) and 2026-07-28 (per request).

With ``extensions=[advertise("io.modelcontextprotocol/ui", ...)]`` the client
sees the extension negotiated, the tool's link, and the linked resource
readable as ``text/html;profile=mcp-app`` with its CSP; without it, the tool
answers in text and carries no UI metadata."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from typing import Any

import mcp as sdk
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from mcp.client.extension import advertise
from support.http_servers import serving
from support.peers import SUPPORT, THIS_TREE, run
from support.ui_server import CSP, PAGE, PAGE_URI, ui_app

from mcpbind.app import UI_EXTENSION_ID, UI_MIME_TYPE

MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
UI_SERVER = SUPPORT / "ui_server.py"

pytestmark = pytest.mark.peers


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


def host_extensions() -> list[Any]:
    return [advertise(UI_EXTENSION_ID, {"mimeTypes": [UI_MIME_TYPE]})]


async def as_apps_host(client: Any, version: str) -> None:
    """SEP-2133: the extension is negotiated when both sides declare it."""
    assert client.protocol_version == version
    assert client.server_capabilities.extensions == {UI_EXTENSION_ID: {}}
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["forecast"].meta["ui"] == {"resourceUri": PAGE_URI}
    assert tools["refresh"].meta["ui"] == {"resourceUri": PAGE_URI, "visibility": ["app"]}
    read = await client.read_resource(tools["forecast"].meta["ui"]["resourceUri"])
    (contents,) = read.contents
    assert contents.mime_type == UI_MIME_TYPE and contents.text == PAGE
    assert contents.meta["ui"]["csp"] == CSP
    assert contents.meta["ui"]["permissions"] == {"geolocation": {}}
    called = await client.call_tool("forecast", {"city": "Oslo"})
    assert called.content[0].text == "Forecast for Oslo is on the dashboard."
    refreshed = await client.call_tool("refresh", {"city": "Oslo"})  # as the App calls it
    assert refreshed.structured_content == {"temperature": 21.0, "wind": 3.5}


async def without_apps(client: Any, version: str) -> None:
    """SEP-2133: an extension degrades gracefully for a client without it."""
    assert client.protocol_version == version
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == ["forecast", "plain"]  # the App-only tool is not the model's
    assert all(tool.meta is None or "ui" not in tool.meta for tool in tools.values())
    called = await client.call_tool("forecast", {"city": "Oslo"})
    assert called.content[0].text == "Oslo: sunny, 21 °C, light wind from the west."


@pytest.mark.parametrize(("mode", "version"), MODES)
@pytest.mark.parametrize("ui", [True, False], ids=["apps-host", "no-apps"])
def test_the_official_client_over_stdio(mode: str, version: str, ui: bool) -> None:
    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(UI_SERVER)], env=THIS_TREE
        )
        extensions = host_extensions() if ui else None
        async with sdk.Client(parameters, mode=mode, extensions=extensions) as client:
            await (as_apps_host if ui else without_apps)(client, version)

    run(main())


@pytest.mark.parametrize(("mode", "version"), MODES)
@pytest.mark.parametrize("ui", [True, False], ids=["apps-host", "no-apps"])
def test_the_official_client_over_streamable_http(mode: str, version: str, ui: bool) -> None:
    async def main(url: str) -> None:
        extensions = host_extensions() if ui else None
        async with sdk.Client(url, mode=mode, extensions=extensions) as client:
            await (as_apps_host if ui else without_apps)(client, version)

    with serving(ui_app().asgi()) as server:
        run(main(server.url()))
