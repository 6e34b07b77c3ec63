"""What the gateway tests share: `mcpx serve --http` in a child process, and
what a front client must see of server-everything behind the prefix ``everything``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support.peers import THIS_TREE

ANNOUNCED = "serving MCP at "


@contextlib.contextmanager
def gateway_over_http(config: Path, *options: str, port: int = 0) -> Iterator[str]:
    """``mcpx serve CONFIG --http [OPTIONS]`` on ``port`` (by default an ephemeral
    one): its URL once it listens (uvicorn binds after the lifespan, so every
    backend has connected by then)."""
    command = ["serve", str(config), "--http", "--port", str(port), *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_runtime.cli", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**THIS_TREE, "PYTHONWARNINGS": "ignore"},
        text=True,
    )
    assert process.stderr is not None
    said: list[str] = []
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
