"""Pinned definitions at the gateway: a backend that changes a pinned tool while
the gateway runs has that tool held back (not listed, calls refused, one log line),
the others keep working; ``mcpx serve --pin FILE --approve`` writes the pins."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp as sdk
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from mcp.shared.exceptions import MCPError
from support.peers import (
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)

from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App, Pins
from mcpbind.methods import RequestContext
from mcpbind_codegen.servers import snapshot as bindings_snapshot
from mcpbind_protocol import v2025_11_25 as legacy

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

SHIFTING = SUPPORT / "shifting_server.py"


def shifting(revision: str = "2025-11-25") -> StdioServerParameters:
    return StdioServerParameters(
        sys.executable,
        [str(SHIFTING)],
        env={**THIS_TREE, "SHIFTING_REVISION": revision},
        stderr=asyncio.subprocess.DEVNULL,
    )


class Watching(legacy.ClientHandlers):
    def __init__(self) -> None:
        self.tools_changed = asyncio.Event()

    async def on_tool_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.tools_changed.set()


async def approve(path: Path, revision: str = "2025-11-25") -> None:
    pins = Pins.load(path, approving=True)
    app = App("gateway")
    app.proxy(shifting(revision), prefix="shifting", pins=pins)
    async with app.test_client():
        pins.save(["shifting"])


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_a_pinned_tool_that_changes_while_serving_is_held_back_and_the_others_keep_working(
    revision: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """At 2026-07-28 the backend tells of the change only on the
    subscriptions/listen stream the proxy keeps open to it."""
    pin_file = tmp_path / "pins.json"

    async def main() -> None:
        await approve(pin_file, revision)
        assert (
            json.loads(pin_file.read_text())["servers"]["shifting"]["protocolVersion"] == revision
        )
        app = App("gateway")
        app.proxy(shifting(revision), prefix="shifting", pins=Pins.load(pin_file))
        watching = Watching()
        async with app.test_client(protocol_version="2025-11-25", handlers=watching) as session:
            stub = legacy.ClientStub(session)
            names = {tool.name for tool in (await stub.list_tools()).tools}
            assert names == {"shifting_convert", "shifting_shift", "shifting_stable"}
            converted = await stub.call_tool("shifting_convert", arguments={"amount": 2})
            assert converted.content[0].text == "2.0 EUR"

            await stub.call_tool("shifting_shift", arguments={})
            await watching.tools_changed.wait()
            await asyncio.sleep(0)
            names = {tool.name for tool in (await stub.list_tools()).tools}
            assert names == {"shifting_shift", "shifting_stable"}
            with pytest.raises(McpError) as refused:
                await stub.call_tool("shifting_convert", arguments={"amount": 2})
            assert refused.value.code == -32602
            assert "tool 'convert' of 'shifting' is held back" in refused.value.message
            assert "changed since it was pinned" in refused.value.message
            stable = await stub.call_tool("shifting_stable", arguments={"text": "still"})
            assert stable.content[0].text == "stable: still"
            prompt = await stub.get_prompt("shifting_greet", arguments={"name": "Ada"})
            assert prompt.messages[0].content.text == "Hello Ada"

    with caplog.at_level(logging.WARNING, logger="mcpbind.app._pinning"):
        run(main())
    held = [
        record.getMessage() for record in caplog.records if record.name == "mcpbind.app._pinning"
    ]
    assert len(held) == 1 and "held back" in held[0] and "\n" not in held[0]


def test_approving_writes_one_bindings_snapshot_per_backend_with_a_sha256_per_definition(
    tmp_path: Path,
) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "shifting": {
                        "command": sys.executable,
                        "args": [str(SHIFTING)],
                        "env": THIS_TREE,
                    }
                }
            }
        )
    )
    pin_file = tmp_path / "pins.json"
    serve = [sys.executable, "-m", "mcpbind.cli", "serve", str(config), "--pin", str(pin_file)]
    env = {**THIS_TREE, "PATH": "/usr/bin:/bin"}

    missing = subprocess.run(serve, env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert (
        missing.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"no pin file at {pin_file}: write it with `mcpx serve CONFIG --pin {pin_file} --approve`"
        )
    )
    approved = subprocess.run(
        [*serve, "--approve"], env=env, capture_output=True, text=True, timeout=60
    )
    assert approved.returncode == 0, approved.stderr
    assert "shifting: tool 'convert' pinned" in approved.stdout

    document = json.loads(pin_file.read_text())
    section = document["servers"]["shifting"]
    assert set(section["sha256"]["tools"]) == {"convert", "shift", "stable"}
    # Each section is a snapshot the typed bindings for servers read.
    parsed = bindings_snapshot.parse(section, str(pin_file))
    assert [tool["name"] for tool in parsed.tools] == ["convert", "shift", "stable"]

    # A pin that does not match what the backend says at start: held from the first list.
    section["sha256"]["tools"]["stable"] = "0" * 64
    pin_file.write_text(json.dumps(document))

    async def main() -> None:
        parameters = SdkStdioParameters(command=sys.executable, args=[*serve[1:]], env=THIS_TREE)
        async with sdk.Client(parameters, mode="legacy") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"shifting_convert", "shifting_shift"}
            with pytest.raises(MCPError) as held:
                await client.call_tool("shifting_stable", {"text": "x"})
            assert "tool 'stable' of 'shifting' is held back" in str(held.value)

    run(main())
