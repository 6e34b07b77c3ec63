"""Each side of a proxy speaks its own revision: what the front receives is
its revision's, whatever the backend's. Checked on the raw results the front
receives: each decodes as the generated type of the front's revision and
encodes back to the same JSON (nothing the revision lacks, nothing lost).

The documented content rule (docs/guides/gateway.md): a block the front's
revision lacks goes through the app layer's media rule, audio becoming an
embedded resource blob before 2025-03-26 and a resource link becoming text
before 2025-06-18."""

from __future__ import annotations

import importlib.util
import json
import sys
from types import ModuleType
from typing import Any

import msgspec
import pytest
from support.http_servers import serving
from support.peers import (
    REPO,
    SERVER_EVERYTHING,
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcpbind import codec
from mcpbind._client.client import ClientSession
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App
from mcpbind_protocol import v2024_11_05, v2025_03_26, v2026_07_28

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

EVERYTHING_EXAMPLE = REPO / "examples" / "everything_server.py"


def example_module() -> ModuleType:
    """A fresh copy of examples/everything_server.py (an app of every revision)."""
    spec = importlib.util.spec_from_file_location("everything_behind_proxy", EVERYTHING_EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def received(session: ClientSession, method: str, params: dict[str, Any], kind: type) -> Any:
    """The raw result of ``method``, checked to be exactly a ``kind`` of the front's revision."""
    raw = bytes(await session.request_raw(method, msgspec.json.encode(params)))
    sent = json.loads(raw)
    value = codec.convert(sent, kind)  # a block type the revision lacks fails here
    assert msgspec.to_builtins(value) == sent, f"{kind.__name__} does not hold {raw!r}"
    return value


def test_a_2026_07_28_backend_is_served_to_2024_11_05_and_2025_03_26_fronts() -> None:
    app = App("front")
    with serving(example_module().app.asgi()) as backend:
        app.proxy(backend.url(), prefix="conf")

        async def main() -> None:
            async with app.test_client(protocol_version="2024-11-05") as session:
                assert app._proxies[0].session is not None
                assert app._proxies[0].session.protocol_version == "2026-07-28"
                listed = await received(session, "tools/list", {}, v2024_11_05.ListToolsResult)
                assert "conf_test_audio_content" in {tool.name for tool in listed.tools}
                audio = await received(
                    session,
                    "tools/call",
                    {"name": "conf_test_audio_content", "arguments": {}},
                    v2024_11_05.CallToolResult,
                )
                (block,) = audio.content
                assert isinstance(block, v2024_11_05.EmbeddedResource)
                assert isinstance(block.resource, v2024_11_05.BlobResourceContents)
                assert block.resource.mime_type == "audio/wav" and block.resource.blob
                read = await received(
                    session,
                    "resources/read",
                    {"uri": "test://conf/static-text"},
                    v2024_11_05.ReadResourceResult,
                )
                assert read.contents[0].uri == "test://conf/static-text"
            async with app.test_client(protocol_version="2025-03-26") as session:
                audio = await received(
                    session,
                    "tools/call",
                    {"name": "conf_test_audio_content", "arguments": {}},
                    v2025_03_26.CallToolResult,
                )
                assert isinstance(audio.content[0], v2025_03_26.AudioContent)

        run(main())


@pytest.mark.node
@pytest.mark.peers
def test_resource_links_reach_a_2024_11_05_front_as_text() -> None:
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")

    async def main() -> None:
        async with app.test_client(protocol_version="2024-11-05") as session:
            links = await received(
                session,
                "tools/call",
                {"name": "everything_get-resource-links", "arguments": {"count": 2}},
                v2024_11_05.CallToolResult,
            )
            texts = [block.text for block in links.content]
            assert all(isinstance(block, v2024_11_05.TextContent) for block in links.content)
            # The text names the URI the front reads the resource at, under the prefix.
            assert any("demo://everything/resource/" in text for text in texts), texts
            assert not any("demo://resource/" in text for text in texts), texts

    run(main())


def test_a_2024_11_05_backend_is_served_to_a_2026_07_28_front_in_its_types() -> None:
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
            added = await stub.call_tool("notes_add_note", arguments={"text": "old"})
            assert isinstance(added, v2026_07_28.CallToolResult)
            assert isinstance(added.content[0], v2026_07_28.TextContent)
            listed = await stub.list_tools()
            assert all(tool.name.startswith("notes_") for tool in listed.tools)
            assert listed.ttl_ms == 0  # the 2026-07-28 caching hints the old backend never sent

    run(main())
