"""Two apps mounted into one (``notes`` and ``billing``): each with its own
lifespan and middleware, a tool, a resource template and a prompt with a
completion. Run as a script, it serves the composed app over stdio."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcpbind.app import App, Call, Context, Next


def notes_app(seen: list[str]) -> App[Any]:
    @contextlib.asynccontextmanager
    async def lifespan(app: App[Any]) -> AsyncIterator[dict[str, str]]:
        seen.append("notes up")
        yield {"store": "notes-store"}
        seen.append("notes down")

    async def mark(call: Call, call_next: Next) -> Any:
        seen.append(f"notes saw {call.method} {call.name}")
        return await call_next(call)

    notes = App("notes", lifespan=lifespan, middleware=[mark])

    @notes.tool()
    def add(text: str, ctx: Context[dict[str, str]]) -> str:
        """Add a note."""
        return f"added {text!r} to {ctx.lifespan['store']}"

    @notes.resource("note://{id}", mime_type="text/plain")
    def note(id: str) -> str:
        return f"note {id}"

    @notes.resource("note://index")
    def index() -> str:
        return "all notes"

    @notes.prompt()
    def summarize(style: str) -> str:
        return f"summarize {style}"

    @notes.completion(prompt="summarize", argument="style")
    def styles(value: str) -> list[str]:
        return [each for each in ("short", "long", "silly") if each.startswith(value)]

    @notes.completion(template="note://{id}", argument="id")
    def ids(value: str) -> list[str]:
        return [f"{value}1", f"{value}2"]

    return notes


def billing_app(seen: list[str]) -> App[Any]:
    @contextlib.asynccontextmanager
    async def lifespan(app: App[Any]) -> AsyncIterator[str]:
        seen.append("billing up")
        yield "ledger"
        seen.append("billing down")

    async def mark(call: Call, call_next: Next) -> Any:
        seen.append(f"billing saw {call.method} {call.name}")
        return await call_next(call)

    billing = App("billing", lifespan=lifespan, middleware=[mark])

    @billing.tool()
    def charge(cents: int, ctx: Context[str]) -> dict[str, Any]:
        return {"charged": cents, "in": ctx.lifespan}

    @billing.tool(tags={"admin"})
    def refund(cents: int) -> int:
        return -cents

    return billing


def composed(seen: list[str] | None = None) -> tuple[App[Any], App[Any], App[Any]]:
    """The main app and the two it mounts."""
    seen = [] if seen is None else seen

    async def outer(call: Call, call_next: Next) -> Any:
        seen.append(f"main saw {call.method} {call.name}")
        return await call_next(call)

    main = App("main", middleware=[outer])

    @main.tool()
    def ping() -> str:
        return "pong"

    notes, billing = notes_app(seen), billing_app(seen)
    main.mount(notes, prefix="notes")
    main.mount(billing, prefix="billing")
    return main, notes, billing


if __name__ == "__main__":
    composed()[0].run("stdio")
