"""Mistakes of a server written with the app layer that mypy --strict reports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import msgspec

from mcpbind.app import App, Context


@dataclass
class State:
    db_path: str


@asynccontextmanager
async def lifespan(app: App[State]) -> AsyncIterator[State]:
    yield State("notes.db")


app = App("typed", lifespan=lifespan)


@app.prompt()  # E: type-var Value of type variable "PromptF"
def prompt_returning_int(topic: str) -> int:
    return len(topic)


@app.prompt()  # E: type-var Value of type variable "PromptF"
async def async_prompt_returning_int(topic: str) -> int:
    return len(topic)


class Note(msgspec.Struct):
    text: str


@app.prompt()  # E: type-var Value of type variable "PromptF"
def prompt_returning_a_struct(topic: str) -> Note:
    return Note(topic)


@app.prompt()  # E: type-var Value of type variable "PromptF"
async def async_prompt_returning_structs(topic: str) -> list[Note]:
    return [Note(topic)]


@app.completion(prompt="summarize", argument="style")  # E: type-var "CompleteF"
def completion_returning_int(value: str) -> int:
    return len(value)


@app.tool(annotations={"readOnlyHnt": True})  # E: arg-type "ToolAnnotations | None"
def misspelled_annotation() -> str:
    return "x"


@app.tool()
def wrong_lifespan_attribute(ctx: Context[State]) -> None:
    print(ctx.lifespan.db_pth)  # E: attr-defined "State" has no attribute "db_pth"


@app.tool()
def lifespan_state_as_wrong_type(ctx: Context[State]) -> int:
    return ctx.lifespan.db_path  # E: return-value got "str", expected "int"


@app.tool()
def headers_used_as_if_always_there(ctx: Context) -> str:
    return ctx.headers["x-tenant"]  # E: index "Mapping[str, str] | None" is not indexable


@app.tool()
async def session_state_of_the_wrong_type(ctx: Context) -> int:
    cart = await ctx.session.get("cart", list[str])
    return cart  # E: return-value got "list[str] | None"


@app.tool()
async def session_state_read_without_a_type(ctx: Context) -> None:
    await ctx.session.get("count")  # E: call-arg Missing positional argument "type_"


lifespan_of_the_wrong_state: App[int] = App("typed", lifespan=lifespan)  # E: arg-type


# MCP Apps: a tool links to the handle app.ui_resource() returns, never to a bare URI
# or another resource; the handle exists only for a ui:// URI (checked when made).
page = app.ui_resource("ui://typed/page.html", "<p>page</p>")


@app.tool(ui="ui://typed/page.html")  # E: arg-type expected "UiResource | None"
def linked_to_a_bare_uri() -> str:
    return "x"


@app.tool(ui=app.resource("note://index"))  # E: arg-type expected "UiResource | None"
def linked_to_another_resource() -> str:
    return "x"


@app.tool(ui=page, ui_visibility=["user"])  # E: list-item
def seen_by_nobody_known() -> str:
    return "x"
