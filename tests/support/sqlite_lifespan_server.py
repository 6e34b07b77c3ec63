"""The servers guide's lifespan example: an aiosqlite database opened around
serving, its file named by ``NOTES_DB`` (default notes.db). Run as a script,
it serves with ``app.run()`` (stdio, or ``MCP_TRANSPORT=http``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiosqlite

from mcpbind.app import App, Context


@dataclass
class State:
    db: aiosqlite.Connection


@contextlib.asynccontextmanager
async def lifespan(app: App[State]) -> AsyncIterator[State]:
    db = await aiosqlite.connect(os.environ.get("NOTES_DB", "notes.db"))
    try:
        yield State(db)
    finally:
        await db.close()


app = App("notes", lifespan=lifespan)


@app.tool()
async def count(ctx: Context[State]) -> int:
    async with ctx.lifespan.db.execute("SELECT count(*) FROM sqlite_master") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0


if __name__ == "__main__":
    app.run()
