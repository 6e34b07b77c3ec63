"""The same generated bindings over sessions of every revision from 2025-03-26 to
2026-07-28: a Client pinned to an older or newer revision than the snapshot's
gets the same typed results.

The peer is the official Python SDK (PyPI ``mcp`` 2.3.0, MCPServer), which
speaks each of those revisions and sends ``structuredContent`` at every one of
them. The bindings are generated from the live server (it negotiates 2026-07-28)
and, from the same snapshot stamped 2025-06-18, a second module, so that each
session is both older and newer than some bindings.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner
from support.peers import SUPPORT, run

from mcpbind._client.client import Client, connect_stdio
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind_codegen.cli import main

SERVER = [sys.executable, str(SUPPORT / "sdk_structured_server.py")]
SESSION_REVISIONS = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
BINDINGS_REVISIONS = ["2025-06-18", "2026-07-28"]


def generate(output: Path, *args: str) -> None:
    result = CliRunner().invoke(main, ["server", *args, "-o", str(output)])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ModuleType]]:
    """The server's bindings at each revision of BINDINGS_REVISIONS."""
    folder = tmp_path_factory.mktemp("revisions")
    live = folder / "sdk_live.py"
    generate(live, "--stdio", " ".join(SERVER))
    snapshot = json.loads(live.with_name("sdk_live.snapshot.json").read_text())
    assert snapshot["protocolVersion"] == "2026-07-28"
    names = {}
    for revision in BINDINGS_REVISIONS:
        name = f"sdk_at_{revision.replace('-', '_')}"
        stamped = folder / f"{name}.json"
        stamped.write_text(json.dumps({**snapshot, "protocolVersion": revision}))
        generate(folder / f"{name}.py", "--snapshot", str(stamped))
        names[revision] = name
    sys.path.insert(0, str(folder))
    yield {revision: importlib.import_module(name) for revision, name in names.items()}
    sys.path.remove(str(folder))
    for name in names.values():
        sys.modules.pop(name, None)


@pytest.mark.peers
@pytest.mark.parametrize("session_revision", SESSION_REVISIONS)
def test_a_typed_call_per_revision_over_the_same_bindings(
    modules: dict[str, ModuleType], session_revision: str
) -> None:
    """Structured output, an embedded resource in a tool's content, a resource
    template and a prompt, each as the bindings' revision's types."""

    async def scenario() -> None:
        parameters = StdioServerParameters(
            command=SERVER[0], args=SERVER[1:], stderr=asyncio.subprocess.DEVNULL
        )
        client = Client(name="revisions", version="0", protocol_version=session_revision)
        async with connect_stdio(client, parameters) as session:
            assert session.protocol_version == session_revision
            for bindings_revision, sdk in modules.items():
                protocol = importlib.import_module(
                    f"mcpbind_protocol.v{bindings_revision.replace('-', '_')}"
                )
                server = sdk.SdkStructured(session)
                forecast = await server.get_forecast(city="Oslo", days=2)
                assert isinstance(forecast, sdk.GetForecastOutput)
                assert (forecast.city, forecast.temperatures) == ("Oslo", [20.5, 21.5])
                attached = await server.attach(name="n1")
                assert isinstance(attached, protocol.CallToolResult)
                (block,) = attached.content
                assert isinstance(block, protocol.EmbeddedResource)
                assert isinstance(block.resource, protocol.TextResourceContents)
                assert (block.resource.uri, block.resource.text) == ("note://n1", "note n1")
                greeting = await server.read_greeting(name="Ada")
                assert isinstance(greeting, protocol.ReadResourceResult)
                assert isinstance(greeting.contents[0], protocol.TextResourceContents)
                assert greeting.contents[0].text == "Hello, Ada!"
                review = await server.prompt_review(code="x = 1")
                assert isinstance(review, protocol.GetPromptResult)
                assert "x = 1" in review.messages[0].content.text

    run(scenario())
