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
from support.gateway import (
    call_every_tool,
    drive_everything,
    gateway_config,
    on_elicit,
    on_roots,
    on_sample,
    three_backends,
)
from support.peers import (
    SERVER_EVERYTHING,
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App
from mcpbind_protocol import v2026_07_28

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


@pytest.mark.node
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


@pytest.mark.node
@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), MODES)
def test_the_gateway_serves_every_tool_of_every_entry_under_its_name(
    tmp_path: Path, mode: str, version: str
) -> None:
    """``mcpx serve`` over server-everything, a server built with the official
    Python SDK and the notes example, driven by the official Python SDK client:
    every backend tool is listed and answers, the backends' questions (sampling,
    elicitation, roots) included. The SDK client runs no tasks, so the
    task-required tool is called at 2026-07-28 (where the gateway runs it in
    place) and refused at 2025-11-25."""
    require(SERVER_EVERYTHING, "server-everything")
    config = gateway_config(tmp_path / "gateway.json", three_backends())

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable,
            args=["-m", "mcpbind.cli", "serve", str(config)],
            env=THIS_TREE,
        )
        async with sdk.Client(
            parameters,
            mode=mode,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_roots,
        ) as client:
            assert client.protocol_version == version
            await call_every_tool(client, tasks=version == "2026-07-28")
            await drive_everything(client)

    run(main())


@pytest.mark.node
@pytest.mark.peers
def test_deny_tools_keeps_an_entrys_tools_out_of_the_gateway(tmp_path: Path) -> None:
    require(SERVER_EVERYTHING, "server-everything")
    servers = three_backends()
    servers["notes"]["denyTools"] = ["delete_*"]
    config = gateway_config(tmp_path / "gateway.json", servers)

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable,
            args=["-m", "mcpbind.cli", "serve", str(config)],
            env=THIS_TREE,
        )
        async with sdk.Client(parameters, mode="auto") as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"notes_add_note", "notes_search_notes", "sdk_add"} <= tools
            assert "notes_delete_note" not in tools
            with pytest.raises(sdk.MCPError, match="Unknown tool"):
                await client.call_tool("notes_delete_note", {"id": 1})

    run(main())
