"""A server built with the official Python SDK (PyPI ``mcp`` 2.3.0, MCPServer),
which speaks 2026-07-28 as well as the handshake revisions: tools (one
reporting progress and logging, one asking the user through an
``InputRequiredResult``), resources and a prompt.

``python sdk_modern_server.py`` serves stdio; ``python sdk_modern_server.py http``
binds 127.0.0.1 on an ephemeral port, prints ``PORT <n>`` once listening and
serves Streamable HTTP at /mcp.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import mcp.types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(
    "sdk-modern-server", version="2.3.0-test", instructions="SDK peer speaking 2026-07-28"
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def count(steps: int = 3, ctx: Context = None) -> str:  # type: ignore[assignment]
    """Report progress and log once per step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
        await ctx.info(f"finished step {step}")
    return f"counted {steps} steps"


@server.tool()
async def ask(ctx: Context = None) -> str | types.InputRequiredResult:  # type: ignore[assignment]
    """Ask the user for a name (an elicitation carried by an InputRequiredResult), then greet them."""
    answer = (ctx.input_responses or {}).get("name")
    if (
        not isinstance(answer, types.ElicitResult)
        or answer.action != "accept"
        or not answer.content
    ):
        return types.InputRequiredResult(
            input_requests={
                "name": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message="What is your name?",
                        requested_schema={
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                            "required": ["name"],
                        },
                    )
                )
            },
            request_state="asked-for-name",
        )
    return f"hello {answer.content['name']} (state {ctx.request_state})"


@server.resource("sdk://static", name="static", mime_type="text/plain")
def static_resource() -> str:
    return "hello from the SDK"


@server.resource("sdk://greeting/{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n{code}"


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


# MCPServer registers no logging/setLevel handler of its own; without one the
# server would not declare the logging capability to handshake clients.
server._lowlevel_server.add_request_handler(
    "logging/setLevel", types.SetLevelRequestParams, set_level
)


def serve_http() -> None:
    app = server.streamable_http_app()
    # proto IPPROTO_TCP, or asyncio leaves Nagle on for accepted connections (40 ms stalls)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)).run(
        sockets=[sock]
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run()
