"""App.proxy and the gateway (``mcpx serve``): any MCP server served as part of
an app, driven by the official Python SDK client at 2025-11-25 and 2026-07-28."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import mcp as sdk
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from support.gateway import drive_everything
from support.peers import (
    SERVER_EVERYTHING,
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcp_protocol import v2026_07_28
from mcp_runtime.app import App
from mcp_runtime.stdio import StdioServerParameters

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), MODES)
def test_proxied_server_everything_is_listed_called_and_read_under_its_prefix(
    mode: str, version: str
) -> None:
    require(SERVER_EVERYTHING, "server-everything")

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(SUPPORT / "proxy_front.py")], env=THIS_TREE
        )
        async with sdk.Client(parameters, mode=mode) as client:
            assert client.protocol_version == version
            assert (await client.call_tool("own", {})).content[0].text == "mine"
            await drive_everything(client)

    run(main())


def test_a_2024_11_05_backend_is_served_to_a_2026_07_28_front() -> None:
    """Each side speaks its own revision: the backend's answers are rebuilt as the front's."""
    app = App("front")
    app.proxy(
        StdioServerParameters(
            sys.executable, [str(SUPPORT / "old_notes_server.py")], env=THIS_TREE
        ),
        prefix="notes",
    )

    async def main() -> None:
        async with app.test_client(protocol_version="2026-07-28") as session:
            backend = app._proxies[0].session
            assert backend is not None and backend.protocol_version == "2024-11-05"
            stub = v2026_07_28.ClientStub(session)
            names = [tool.name for tool in (await stub.list_tools()).tools]
            assert names == ["notes_add_note", "notes_search_notes", "notes_delete_note"]
            added = await stub.call_tool("notes_add_note", arguments={"text": "old"})
            assert json.loads(added.content[0].text)["text"] == "old"
            templates = (await stub.list_resource_templates()).resource_templates
            assert [each.uri_template for each in templates] == ["note://notes/{id}"]
            read = await stub.read_resource("note://notes/1")
            assert read.contents[0].uri == "note://notes/1" and read.ttl_ms == 0

    run(main())


def test_the_gateway_serves_every_entry_under_its_name(tmp_path: Path) -> None:
    require(SERVER_EVERYTHING, "server-everything")
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "everything": {"command": str(SERVER_EVERYTHING), "args": ["stdio"]},
                    "notes": {
                        "command": sys.executable,
                        "args": [str(SUPPORT.parent.parent / "examples" / "notes_server.py")],
                        "env": THIS_TREE,
                        "denyTools": ["delete_*"],
                    },
                }
            }
        )
    )

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable,
            args=["-m", "mcp_runtime.cli", "serve", str(config)],
            env=THIS_TREE,
        )
        async with sdk.Client(parameters, mode="auto") as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"notes_add_note", "notes_search_notes", "everything_echo"} <= tools
            assert "notes_delete_note" not in tools  # denyTools
            added = await client.call_tool("notes_add_note", {"text": "via gateway"})
            assert added.structured_content["text"] == "via gateway"
            await drive_everything(client)

    run(main())
