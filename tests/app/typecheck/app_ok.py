"""A production-style server written with the app layer: mypy --strict finds nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcpbind.app import (
    App,
    Call,
    Content,
    Context,
    File,
    Image,
    Message,
    Next,
    RateLimit,
    Timing,
    UiCsp,
    UiPermissions,
)
from mcpbind_protocol import v2024_11_05, v2025_11_25, v2026_07_28


@dataclass
class State:
    db_path: str
    greeting: str


@asynccontextmanager
async def lifespan(app: App[State]) -> AsyncIterator[State]:
    yield State("notes.db", "hello")


async def tenant_header(call: Call, call_next: Next) -> Any:
    if call.headers is not None and "x-blocked" in call.headers:
        return None
    return await call_next(call)


app = App("typed", lifespan=lifespan, middleware=[Timing(), tenant_header, RateLimit(100)])


@app.tool(annotations={"readOnlyHint": True, "openWorldHint": False}, tags={"public"})
async def greet(name: str, ctx: Context[State]) -> str:
    tenant = ctx.headers.get("x-tenant", "none") if ctx.headers is not None else "stdio"
    visits = await ctx.session.get("visits", int) or 0
    await ctx.session.set("visits", visits + 1)
    return f"{ctx.lifespan.greeting} {name} from {tenant} ({visits})"


@app.tool()
def picture() -> list[Content]:
    return ["a dot:", Image(b"\x89PNG\r\n\x1a\n"), File(b"a,b\n", name="dot.csv")]


@app.prompt()
def summarize(topic: str) -> list[Message]:
    return [Message("user", f"Summarize {topic}")]


@app.prompt()
async def plain(topic: str) -> str:
    return topic


@app.prompt()
def one_message(topic: str) -> Message:
    return Message("assistant", Image(b"\x89PNG"))


@app.prompt()
def strings_and_messages(topic: str) -> tuple[str | Message, ...]:
    return (topic, Message("user", topic))


@app.prompt()
def a_revisions_message(topic: str) -> v2025_11_25.PromptMessage:
    return v2025_11_25.PromptMessage(role="user", content=v2025_11_25.TextContent(text=topic))


@app.prompt()
def a_revisions_messages(topic: str) -> list[v2024_11_05.PromptMessage]:
    return [v2024_11_05.PromptMessage(role="user", content=v2024_11_05.TextContent(text=topic))]


@app.prompt()
async def a_revisions_result(topic: str) -> v2026_07_28.GetPromptResult:
    message = v2026_07_28.PromptMessage(role="user", content=v2026_07_28.TextContent(text=topic))
    return v2026_07_28.GetPromptResult(messages=[message])


@app.completion(prompt="summarize", argument="topic")
def topics(value: str) -> list[str]:
    return [t for t in ("mcp", "msgspec") if t.startswith(value)]


@app.completion(prompt="plain", argument="topic")
async def more_topics(value: str, filled: dict[str, str]) -> tuple[str, ...]:
    return (value,)


def hide_admin(app: App[State]) -> None:
    app.disable(tags={"admin"})


dashboard = app.ui_resource(
    "ui://notes/dashboard.html",
    "<main>notes</main>",
    csp=UiCsp(connect_domains=["https://api.example.com"]),
    permissions=UiPermissions(clipboard_write={}),
)


@app.tool(ui=dashboard)
def show_notes(ctx: Context[State]) -> str:
    return "on the dashboard" if ctx.client_supports_ui() else "three notes"


@app.tool(ui=dashboard, ui_visibility=["app"])
def refresh_notes() -> list[str]:
    return ["a", "b"]
