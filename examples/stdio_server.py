"""An MCP server over stdio, written with the application layer: tools (one
with structured output, one reporting progress, one slow and cancellable, two
that fail on purpose), resources and a resource template, a prompt,
completion and logging. One set of functions serves every protocol revision.

Run it under a client: ``python examples/stdio_client.py``; or by hand with
``python examples/stdio_server.py`` and JSON-RPC lines on stdin.
examples/http_server.py serves the same app over HTTP.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

import msgspec

from mcpbind import App, Context

app = App(
    "mcp-codegen-example",
    "0.1.0",
    instructions="An example server for the mcp-codegen runtime.",
)


class Sum(msgspec.Struct):
    sum: float


@app.tool()
def echo(text: str) -> str:
    """Return the text it is given."""
    return text


@app.tool()
def add(a: float, b: float) -> Sum:
    """Add two numbers."""
    return Sum(a + b)


@app.tool()
async def count(ctx: Context, steps: Annotated[int, msgspec.Meta(ge=1)] = 3) -> str:
    """Count to `steps`, reporting progress and logging each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
        await ctx.info(f"reached step {step}", logger="count")
        await asyncio.sleep(0)
    return f"counted to {steps}"


@app.tool()
async def sleep(seconds: float = 60) -> str:
    """Wait `seconds` before answering; cancel it to stop early."""
    await asyncio.sleep(seconds)
    return "awake"


@app.tool()
async def reconnect(ctx: Context, pause: float = 0.2) -> str:
    """Over HTTP, close this call's SSE stream mid-way (the client resumes it),
    wait `pause` seconds and answer; reports progress and logs before, during and after."""
    await ctx.report_progress(1, 3, "before the stream closes")
    await ctx.info("closing the stream", logger="reconnect")
    ctx.close_sse_stream()
    await ctx.report_progress(2, 3, "while the client is away")
    await ctx.info("sent while the client was away", logger="reconnect")
    await asyncio.sleep(pause)
    await ctx.report_progress(3, 3, "after the pause")
    return "resumed"


@app.tool()
def fail() -> str:
    """Raise an exception: the client gets an internal error, the traceback stays on stderr."""
    raise RuntimeError("the fail tool failed (this text must not reach the client)")


@app.tool()
def crash() -> None:
    """End the server process at once with exit status 3, as a crash would."""
    os._exit(3)


@app.resource("memo://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return "This server exists to show the runtime."


@app.resource("memo://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return b"\x89PNG\r\n\x1a\n"


@app.resource("greeting://{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


@app.prompt()
def review(code: str, language: str = "code") -> str:
    """Ask for a code review."""
    return f"Please review this {language}:\n{code}"


@app.completion(prompt="review", argument="language")
def complete_language(value: str) -> list[str]:
    return [
        language
        for language in ("python", "rust", "ruby", "go", "typescript")
        if language.startswith(value)
    ]


@app.completion(template="greeting://{name}", argument="name")
def complete_name(value: str) -> list[str]:
    return [name for name in ("alice", "bob", "carol") if name.startswith(value)]


if __name__ == "__main__":
    app.run()
