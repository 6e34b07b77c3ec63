"""An app whose tools do what the specification forbids unless the client allows it, for
the tests of capabilities in depth, progress and structured results.

``ask`` (``kind``: ``form``, ``url`` or ``sampling_tools``) asks the client the way the
request's revision does (a request before 2026-07-28, an input-required result from it
on); on the handshake revisions a refusal reaches the tool as an McpError and the tool
answers ``refused: <message>``. ``bad_output`` and ``bad_list`` return what their return
annotation rules out. A prompt, a resource, a template and a completion make the lists
and completion/complete to page and refer to. ``late_progress`` reports 5, 3, 5 and leaves a task behind that
reports again once ``release`` is called (which returns after that report was made).

``python tests/support/audit_server.py`` serves it over stdio.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from mcpbind import codec
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App, Context

app = App("audit", "1.0")

URL_PARAMS = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://example.com/sign-in",
    "elicitationId": "e-1",
}
SAMPLING_TOOLS_PARAMS = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    "maxTokens": 5,
    "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}],
}


class Name(msgspec.Struct):
    name: str


class Out(msgspec.Struct):
    n: int


@app.tool()
async def ask(kind: str, ctx: Context) -> Any:
    """Ask the client: a form, a URL, or a model with tools."""
    revision = lifecycle.revision(ctx.protocol_version)
    types: Any = revision.package
    if not revision.has_handshake:
        if kind == "form":
            await ctx.elicit("Your name?", Name)
            return "answered"
        method, params = (
            ("elicitation/create", URL_PARAMS)
            if kind == "url"
            else ("sampling/createMessage", SAMPLING_TOOLS_PARAMS)
        )
        request = types.ElicitRequest if kind == "url" else types.CreateMessageRequest
        spec = revision.table("INPUT_REQUESTS")[method]
        asked = request(params=codec.convert(params, spec.params))
        if ctx.params.input_responses:
            return "answered"
        return types.InputRequiredResult(input_requests={"k": asked}, request_state="s")
    try:
        if kind == "form":
            await ctx.elicit("Your name?", Name)
        else:
            method, params = (
                ("elicitation/create", URL_PARAMS)
                if kind == "url"
                else ("sampling/createMessage", SAMPLING_TOOLS_PARAMS)
            )
            spec = revision.all_methods[method]
            peer = ctx.request_context.peer
            await peer.request(spec, codec.convert(params, spec.params))
    except McpError as error:
        return f"refused: {error.message}"
    return "sent"


@app.tool()
def bad_output() -> Out:
    """Returns an Out whose n is not an integer."""
    return Out(n="x")  # type: ignore[arg-type]  # what a careless tool does


@app.tool()
def bad_list() -> list[int]:
    """Returns a list that is not of integers."""
    return ["x"]  # type: ignore[list-item]


@app.tool()
def good_output() -> Out:
    return Out(n=1)


@app.prompt()
def greet(name: str) -> str:
    return f"Greet {name}"


@app.resource("memo://a")
def memo() -> str:
    return "a"


@app.resource("note://{id}")
def note(id: str) -> str:
    return id


@app.completion(prompt="greet", argument="name")
def names(value: str) -> list[str]:
    return [name for name in ("Ann", "Bob") if name.startswith(value)]


_late: dict[str, Any] = {}


@app.tool()
async def late_progress(ctx: Context) -> str:
    """Reports 5, 3, 5 and 6; a task it starts reports 7 once ``release`` is called."""
    for value in (5, 3, 5, 6):
        await ctx.report_progress(value, 10)
    gate = asyncio.Event()

    async def later() -> None:
        await gate.wait()
        await ctx.report_progress(7, 10)

    _late["gate"] = gate
    _late["task"] = asyncio.get_running_loop().create_task(later())
    return "returned"


@app.tool()
async def release() -> str:
    """Lets the task of ``late_progress`` report, and returns once it has."""
    gate, task = _late.pop("gate"), _late.pop("task")
    gate.set()
    await task
    return "released"


if __name__ == "__main__":
    app.run()
