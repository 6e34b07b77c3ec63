"""MCP Apps in the app layer (``app.ui_resource``, ``@app.tool(ui=...)``):
the UI link, the resource as hosts read it, the extension declared by both
sides on every revision, graceful degradation for clients without it, and the
gateway's prefix rule (mounted apps and proxied servers), through real client
sessions of this runtime (in memory, and a proxied server over stdio)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.peers import SUPPORT, THIS_TREE
from support.ui_server import CSP, PAGE, PAGE_URI, ui_app

from mcpbind._client.client import Client, ClientSession
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import UI_EXTENSION_ID, UI_MIME_TYPE, App, Context, UiResource
from mcpbind.codec import encode

ALL = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
# Tools carry `_meta` from 2025-06-18 on: before it, no revision can link a UI.
WITH_TOOL_META = ["2025-06-18", "2025-11-25", "2026-07-28"]
UI_SETTINGS = {"mimeTypes": [UI_MIME_TYPE]}


def wire(value: Any) -> Any:
    return json.loads(encode(value))


def stub(session: ClientSession) -> Any:
    return lifecycle.revision(session.protocol_version).package.ClientStub(session)


def with_client(app: App[Any], version: str, check: Any, ui: bool) -> None:
    extensions = {UI_EXTENSION_ID: UI_SETTINGS} if ui else None
    client = Client(name="host", version="0", protocol_version=version, extensions=extensions)

    async def main() -> None:
        async with app.test_client(client=client) as session:
            assert session.protocol_version == version
            await check(session)

    asyncio.run(main())


async def tools_by_name(session: ClientSession) -> dict[str, Any]:
    return {tool["name"]: tool for tool in wire(await stub(session).list_tools())["tools"]}


# ------------------------------------------------------------ negotiation


@pytest.mark.parametrize("version", ALL)
def test_the_extension_is_declared_by_both_sides_on_every_revision(version: str) -> None:
    """SEP-2133: client and server declare ``capabilities.extensions[id]``; on
    the revisions before the schema named it, the declaration survives too
    (the official SDKs and Apps hosts send it there)."""
    seen: list[Any] = []
    app = ui_app()

    @app.tool()
    def settings(ctx: Context) -> str:
        seen.append(ctx.client_extension(UI_EXTENSION_ID))
        return "ok"

    async def check(session: ClientSession) -> None:
        assert session.server_extension(UI_EXTENSION_ID) == {}
        await stub(session).call_tool(name="settings", arguments={})
        assert seen == [UI_SETTINGS]

    with_client(app, version, check, ui=True)


@pytest.mark.parametrize("version", ALL)
def test_a_client_without_the_extension_declares_none(version: str) -> None:
    seen: list[Any] = []
    app = ui_app()

    @app.tool()
    def settings(ctx: Context) -> str:
        seen.append((ctx.client_extension(UI_EXTENSION_ID), ctx.client_supports_ui()))
        return "ok"

    async def check(session: ClientSession) -> None:
        await stub(session).call_tool(name="settings", arguments={})
        assert seen == [(None, False)]

    with_client(app, version, check, ui=False)


def test_an_app_without_ui_resources_declares_no_extension() -> None:
    app = App("plain")

    @app.tool()
    def echo(text: str) -> str:
        return text

    async def check(session: ClientSession) -> None:
        assert session.server_extension(UI_EXTENSION_ID) is None

    with_client(app, "2025-11-25", check, ui=True)


# ------------------------------------------------------------ linked tools and the resource


@pytest.mark.parametrize("version", WITH_TOOL_META)
def test_a_linked_tool_names_its_ui_resource_for_a_client_with_the_extension(
    version: str,
) -> None:
    async def check(session: ClientSession) -> None:
        tools = await tools_by_name(session)
        assert tools["forecast"]["_meta"]["ui"] == {"resourceUri": PAGE_URI}
        assert tools["refresh"]["_meta"]["ui"] == {"resourceUri": PAGE_URI, "visibility": ["app"]}
        assert "_meta" not in tools["plain"]
        called = wire(await stub(session).call_tool(name="forecast", arguments={"city": "Oslo"}))
        assert called["content"][0]["text"] == "Forecast for Oslo is on the dashboard."
        refreshed = await stub(session).call_tool(name="refresh", arguments={"city": "Oslo"})
        assert wire(refreshed)["structuredContent"] == {"temperature": 21.0, "wind": 3.5}

    with_client(ui_app(), version, check, ui=True)


@pytest.mark.parametrize("version", ALL)
def test_the_ui_resource_is_html_of_the_apps_profile_with_its_csp(version: str) -> None:
    """A UI resource is served as ``text/html;profile=mcp-app``, with its
    ``_meta.ui`` (CSP, permissions, border) where the revision carries it."""

    async def check(session: ClientSession) -> None:
        listed = wire(await stub(session).list_resources())["resources"]
        (item,) = [each for each in listed if each["uri"] == PAGE_URI]
        assert item["mimeType"] == UI_MIME_TYPE
        read = wire(await stub(session).read_resource(uri=PAGE_URI))
        (contents,) = read["contents"]
        assert contents["mimeType"] == UI_MIME_TYPE and contents["text"] == PAGE
        if version >= "2025-06-18":  # resource contents carry `_meta` from then on
            assert contents["_meta"]["ui"] == {
                "csp": CSP,
                "permissions": {"geolocation": {}},
                "prefersBorder": True,
            }
            assert item["_meta"]["ui"]["csp"] == CSP

    with_client(ui_app(), version, check, ui=True)


def test_html_from_a_file_is_read_at_each_read_and_from_a_function(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<p>one</p>")
    app = App("files")
    app.ui_resource("ui://files/page.html", page)

    async def generated() -> str:
        return "<p>made</p>"

    app.ui_resource("ui://files/made.html", generated)
    app.ui_resource("ui://files/sync.html", lambda: "<p>sync</p>")

    async def check(session: ClientSession) -> None:
        async def text(uri: str) -> str:
            read = wire(await stub(session).read_resource(uri=uri))
            return str(read["contents"][0]["text"])

        assert await text("ui://files/page.html") == "<p>one</p>"
        page.write_text("<p>two</p>")
        assert await text("ui://files/page.html") == "<p>two</p>"
        assert await text("ui://files/made.html") == "<p>made</p>"
        assert await text("ui://files/sync.html") == "<p>sync</p>"

    with_client(app, "2025-11-25", check, ui=True)


def test_only_ui_uris_and_ui_handles_are_taken() -> None:
    app = App("strict")
    for uri in ("https://example.com/page.html", "ui:/page", "ui://", "file:///page.html"):
        with pytest.raises(ValueError, match="ui://"):
            app.ui_resource(uri, "<p/>")
    with pytest.raises(ValueError, match="ui://"):
        UiResource("resource://page", "<p/>")
    with pytest.raises(TypeError, match="UiResource"):
        app.add_tool(lambda: "x", name="linked", ui="ui://strict/page.html")  # type: ignore[arg-type]
    page = app.ui_resource("ui://strict/page.html", "<p/>")
    with pytest.raises(ValueError, match="'model' and 'app'"):
        app.add_tool(lambda: "x", name="bad", ui=page, ui_visibility=["user"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="needs ui="):
        app.add_tool(lambda: "x", name="unlinked", ui_visibility=["app"])


# ------------------------------------------------------------ degradation


@pytest.mark.parametrize("version", ALL)
def test_a_client_without_the_extension_gets_text_and_no_ui_metadata(version: str) -> None:
    """SEP-2133: an extension degrades gracefully; a client that did not
    negotiate MCP Apps sees the linked tool without ``_meta.ui`` (nor the
    legacy ``ui/resourceUri``) and gets meaningful text from it."""

    async def check(session: ClientSession) -> None:
        tools = await tools_by_name(session)
        assert sorted(tools) == ["forecast", "plain"]
        for tool in tools.values():
            assert "ui" not in tool.get("_meta", {})
            assert "ui/resourceUri" not in tool.get("_meta", {})
        called = wire(await stub(session).call_tool(name="forecast", arguments={"city": "Oslo"}))
        assert called["content"][0]["text"] == "Oslo: sunny, 21 °C, light wind from the west."

    with_client(ui_app(), version, check, ui=False)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_an_app_only_tool_is_unknown_to_a_client_without_the_extension(version: str) -> None:
    """ext-apps: a tool whose visibility is ``["app"]`` is not the model's to
    see or call; a client without Apps has no App to call it either."""

    async def check(session: ClientSession) -> None:
        with pytest.raises(McpError, match="Unknown tool: refresh"):
            await stub(session).call_tool(name="refresh", arguments={"city": "Oslo"})

    with_client(ui_app(), version, check, ui=False)


def test_a_client_declaring_other_mime_types_only_is_not_an_apps_host() -> None:
    client = Client(
        name="other",
        version="0",
        protocol_version="2025-11-25",
        extensions={UI_EXTENSION_ID: {"mimeTypes": ["text/uri-list"]}},
    )

    async def main() -> None:
        async with ui_app().test_client(client=client) as session:
            assert sorted(await tools_by_name(session)) == ["forecast", "plain"]

    asyncio.run(main())


# ------------------------------------------------------------ the gateway


def test_a_mounted_apps_ui_links_follow_the_prefix_rule() -> None:
    main = App("main")
    main.mount(ui_app(), prefix="weather")
    outer = "ui://weather/weather/dashboard.html"

    async def check(session: ClientSession) -> None:
        tools = await tools_by_name(session)
        assert tools["weather_forecast"]["_meta"]["ui"] == {"resourceUri": outer}
        assert tools["weather_forecast"]["_meta"]["ui/resourceUri"] == outer
        assert tools["weather_refresh"]["_meta"]["ui"]["resourceUri"] == outer
        read = wire(await stub(session).read_resource(uri=outer))
        (contents,) = read["contents"]
        assert contents["uri"] == outer and contents["mimeType"] == UI_MIME_TYPE
        assert contents["_meta"]["ui"]["csp"] == CSP

    with_client(main, "2025-11-25", check, ui=True)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_proxied_servers_ui_links_follow_the_prefix_rule(version: str) -> None:
    """A gateway serves a backend's App: the tool's link and the resource it
    names are both under the prefix, and the resource reads through it."""
    gateway = App("gateway")
    gateway.proxy(
        StdioServerParameters(sys.executable, [str(SUPPORT / "ui_server.py")], env=THIS_TREE),
        prefix="wx",
    )
    outer = "ui://wx/weather/dashboard.html"

    async def check(session: ClientSession) -> None:
        tools = await tools_by_name(session)
        assert tools["wx_forecast"]["_meta"]["ui"] == {"resourceUri": outer}
        assert tools["wx_refresh"]["_meta"]["ui"] == {"resourceUri": outer, "visibility": ["app"]}
        listed = [each["uri"] for each in wire(await stub(session).list_resources())["resources"]]
        assert outer in listed
        read = wire(await stub(session).read_resource(uri=outer))
        (contents,) = read["contents"]
        assert contents["uri"] == outer and contents["mimeType"] == UI_MIME_TYPE
        assert contents["text"] == PAGE and contents["_meta"]["ui"]["csp"] == CSP

    with_client(gateway, version, check, ui=True)


def test_a_gateway_degrades_a_proxied_app_for_a_client_without_the_extension() -> None:
    gateway = App("gateway")
    gateway.proxy(
        StdioServerParameters(sys.executable, [str(SUPPORT / "ui_server.py")], env=THIS_TREE),
        prefix="wx",
    )

    async def check(session: ClientSession) -> None:
        tools = await tools_by_name(session)
        assert sorted(tools) == ["wx_forecast", "wx_plain"]
        assert all("ui" not in tool.get("_meta", {}) for tool in tools.values())

    with_client(gateway, "2025-11-25", check, ui=False)


def test_a_host_declaring_the_extension_under_experimental_is_an_apps_host() -> None:
    """Hosts that predate SEP-2133 declared an extension under
    ``capabilities.experimental[id]``; it is read there too."""
    client = Client(
        name="older-host",
        version="0",
        protocol_version="2025-06-18",
        capabilities={"experimental": {UI_EXTENSION_ID: UI_SETTINGS}},
    )

    async def main() -> None:
        async with ui_app().test_client(client=client) as session:
            tools = await tools_by_name(session)
            assert tools["forecast"]["_meta"]["ui"] == {"resourceUri": PAGE_URI}

    asyncio.run(main())


def test_degradation_holds_with_visibility_rules_and_tools_added_while_serving() -> None:
    app = ui_app()
    app.disable(names={"plain"})

    async def check(session: ClientSession) -> None:
        assert sorted(await tools_by_name(session)) == ["forecast"]
        page = app.ui_resource("ui://weather/late.html", "<p>late</p>")
        app.add_tool(lambda: "late", name="late", ui=page, ui_visibility=["app"])
        app.add_tool(lambda: "linked", name="linked", ui=page)
        tools = await tools_by_name(session)
        assert sorted(tools) == ["forecast", "linked"]
        assert all("ui" not in tool.get("_meta", {}) for tool in tools.values())

    with_client(app, "2025-11-25", check, ui=False)
