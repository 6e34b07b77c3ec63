"""An MCP server speaking 2026-07-28, and the older revisions to clients that
still start with initialize, from one set of functions (the application layer).

Tools: echo, add, progress (reports progress), ask (asks the user for a name:
at 2026-07-28 an input-required result the client answers before retrying
the call, before it a request in the middle of the call) and log (logs at
three levels: a 2026-07-28 client gets the messages only when its request
asks for a log level). Lists and reads carry caching hints (ttlMs,
cacheScope). One resource, one prompt.

``python examples/stateless_server.py`` serves stdio (try it with
``python examples/stateless_client.py``); ``--http --port 8000`` serves Streamable
HTTP at http://127.0.0.1:8000/mcp.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Annotated

import msgspec

from mcpbind import App, Context

# Clients may keep the lists and reads a minute before asking again, in any cache.
app = App(
    "mcp-codegen-stateless-example",
    "0.1.0",
    instructions="An example server for the 2026-07-28 runtime.",
    cache_ttl_ms=60_000,
    cache_scope="public",
)


class Sum(msgspec.Struct):
    sum: float


class Name(msgspec.Struct):
    name: Annotated[str, msgspec.Meta(description="Your name")]


@app.tool()
def echo(text: str) -> str:
    """Return the text it is given."""
    return text


@app.tool()
def add(a: float, b: float) -> Sum:
    """Add two numbers."""
    return Sum(a + b)


@app.tool()
async def progress(ctx: Context, steps: int = 3) -> str:
    """Count to `steps`, reporting progress at each."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
        await asyncio.sleep(0)
    return f"done {steps} steps"


@app.tool()
async def ask(ctx: Context) -> str:
    """Ask the user for their name, then greet them."""
    # At 2026-07-28 this function runs twice: the first run asks, the retry
    # carries the answer (kept by the client in the sealed requestState).
    answer = await ctx.elicit("What is your name?", Name)
    if answer.data is None:
        return f"no name ({answer.action})"
    return f"Hello, {answer.data.name}!"


@app.tool()
async def log(ctx: Context, message: str = "hello") -> str:
    """Log a message at debug, info and warning level."""
    await ctx.debug(f"debug: {message}", logger="log")
    await ctx.info(f"info: {message}", logger="log")
    await ctx.warning(f"warning: {message}", logger="log")
    return "logged"


@app.resource("memo://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return "This server speaks MCP 2026-07-28 and 2025-11-25."


@app.prompt()
def review(code: str, language: str = "code") -> str:
    """Ask for a code review."""
    return f"Please review this {language}:\n{code}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--http", action="store_true", help="serve Streamable HTTP instead of stdio"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--stack", default="uvicorn", help="HTTP server: uvicorn (default), uvicorn-h11 or granian"
    )
    options = parser.parse_args()
    if not options.http:
        app.run()
        return
    from mcpbind import run_http

    run_http(app.server(), host=options.host, port=options.port, stack=options.stack)


if __name__ == "__main__":
    main()
