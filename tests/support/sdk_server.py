"""A stdio server built with the official Python SDK (PyPI ``mcp`` 2.3.0,
MCPServer API) for the interop tests: tools (one reporting progress, one slow
that records being cancelled), resources, a prompt, completion and logging.

Run as ``python tests/support/sdk_server.py``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(
    "sdk-test-server", version="2.3.0-test", instructions="SDK peer for the interop tests"
)


class _Cancellations:
    """How many ``slow`` calls were cancelled, and a way to wait for the next."""

    def __init__(self) -> None:
        self.count = 0
        self._event: anyio.Event | None = None

    def event(self) -> anyio.Event:
        if self._event is None:
            self._event = anyio.Event()
        return self._event

    def record(self) -> None:
        self.count += 1
        self.event().set()
        self._event = None


cancellations = _Cancellations()


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
async def slow(seconds: float = 60.0, ctx: Context = None) -> str:  # type: ignore[assignment]
    """Report progress 0 ("sleeping"), then sleep, unless cancelled first (cancellations are counted)."""
    try:
        await ctx.report_progress(0, None, "sleeping")
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        cancellations.record()
        raise
    return "woke up"


@server.tool()
async def cancelled_calls(at_least: int = 0) -> int:
    """How many ``slow`` calls were cancelled, waiting (up to 30 s) until at least ``at_least``."""
    with anyio.move_on_after(30):
        while cancellations.count < at_least:
            await cancellations.event().wait()
    return cancellations.count


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


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> types.Completion | None:
    if argument.name == "language":
        values = [v for v in ("python", "perl", "rust", "ruby") if v.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)
    return None


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    print(f"logging/setLevel {params.level}", file=sys.stderr)
    return types.EmptyResult()


# MCPServer registers no logging/setLevel handler of its own; without one the
# server would not declare the logging capability.
server._lowlevel_server.add_request_handler(
    "logging/setLevel", types.SetLevelRequestParams, set_level
)


if __name__ == "__main__":
    server.run()
