"""An application written with mcpbind.app: mypy --strict accepts it."""

from __future__ import annotations

import msgspec

from mcpbind.app import App, Context, Elicited, ToolError, call_tool_typed
from mcpbind._client.client import ClientSession

app = App("typed", "1.0")


class Note(msgspec.Struct):
    id: int
    text: str


class Form(msgspec.Struct):
    name: str


@app.tool(title="Add a note")
async def add_note(text: str, ctx: Context) -> Note:
    answer: Elicited[Form] = await ctx.elicit("Your name?", Form)
    if answer.data is None:
        raise ToolError("no name")
    await ctx.report_progress(1, 2, "halfway")
    await ctx.log("info", {"by": answer.data.name})
    return Note(id=1, text=f"{text} by {answer.data.name}")


@app.tool()
def add(a: int, b: int = 0) -> int:
    return a + b


@app.resource("note://{id}")
def note(id: int) -> str:
    return str(id)


@app.prompt()
def summarize(topic: str) -> str:
    return f"Summarize {topic}"


total: int = add(1, 2)  # the decorators keep each function's own signature


async def client(session: ClientSession) -> str:
    created = await call_tool_typed(session, "add_note", {"text": "milk"}, result_type=Note)
    return created.text
