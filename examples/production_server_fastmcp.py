"""examples/production_server.py written with FastMCP (``pip install
'mcpbind[bench]'``), for the side-by-side page
(docs/guides/fastmcp-side-by-side.md): the same tools, resource and prompt,
lifespan, middleware, tenant header, session state, media and visibility by
tag (the export is not a task here: see export_notes)."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import aiosqlite
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware.logging import StructuredLoggingMiddleware
from fastmcp.server.middleware.rate_limiting import SlidingWindowRateLimitingMiddleware
from fastmcp.utilities.types import File, Image
from pydantic import BaseModel, Field


class Note(BaseModel):
    id: int
    text: str
    tenant: str


@contextlib.asynccontextmanager
async def lifespan(server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
    path = Path(os.environ.get("NOTES_DB", "notes.db"))
    if not path.parent.is_dir():
        raise FileNotFoundError(f"no directory {path.parent} for the database")
    db = await aiosqlite.connect(path)
    try:
        await db.execute(
            "CREATE TABLE IF NOT EXISTS notes"
            " (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, text TEXT NOT NULL)"
        )
        await db.commit()
        yield {"db": db}
    finally:
        await db.close()


mcp: FastMCP[Any] = FastMCP(
    "production-notes",
    version="1.0",
    lifespan=lifespan,
    middleware=[
        StructuredLoggingMiddleware(),
        SlidingWindowRateLimitingMiddleware(max_requests=600, window_minutes=1),
    ],
)
mcp.disable(tags={"admin"})


def database(ctx: Context) -> aiosqlite.Connection:
    db: aiosqlite.Connection = ctx.lifespan_context["db"]
    return db


def tenant_of() -> str:
    return get_http_headers().get("x-tenant", "public")


@mcp.tool(title="Add a note")
async def add_note(text: Annotated[str, Field(min_length=1)], ctx: Context) -> Note:
    """Store a note for the caller's tenant."""
    db = database(ctx)
    tenant = tenant_of()
    cursor = await db.execute("INSERT INTO notes (tenant, text) VALUES (?, ?)", (tenant, text))
    await db.commit()
    note_id = cursor.lastrowid
    assert note_id is not None
    recent: list[int] = await ctx.get_state("recent") or []
    await ctx.set_state("recent", [*recent, note_id])
    return Note(id=note_id, text=text, tenant=tenant)


@mcp.tool(title="Notes added in this session", annotations={"readOnlyHint": True})
async def recent_notes(ctx: Context) -> list[int]:
    """The ids of the notes this session added."""
    recent: list[int] = await ctx.get_state("recent") or []
    return recent


@mcp.tool(title="A note as a card", annotations={"readOnlyHint": True})
async def note_card(id: int, ctx: Context) -> list[Any]:
    """The note as text, a picture, and a CSV file."""
    note = await _note(ctx, id)
    rows = io.StringIO()
    csv.writer(rows).writerows([["id", "tenant", "text"], [note.id, note.tenant, note.text]])
    return [
        f"Note {note.id}: {note.text}",
        Image(data=_swatch(len(note.text)), format="png"),
        File(data=rows.getvalue().encode(), format="csv", name=f"note-{note.id}.csv"),
    ]


@mcp.tool(title="Unlock the admin tools for this session")
async def unlock_admin(code: str, ctx: Context) -> str:
    if code != os.environ.get("NOTES_ADMIN_CODE", "letmein"):
        raise ToolError("wrong code")
    await ctx.enable_components(tags={"admin"})
    return "admin tools unlocked"


@mcp.tool(title="Delete every note of the tenant", tags={"admin"})
async def purge_notes(ctx: Context) -> int:
    db = database(ctx)
    cursor = await db.execute("DELETE FROM notes WHERE tenant = ?", (tenant_of(),))
    await db.commit()
    return cursor.rowcount


# FastMCP runs tools as tasks with task=True, which needs its tasks extra (Docket),
# not installed here: this export runs in place.
@mcp.tool(title="Export the tenant's notes")
async def export_notes(ctx: Context) -> str:
    await asyncio.sleep(0.05)
    async with database(ctx).execute(
        "SELECT id, text FROM notes WHERE tenant = ? ORDER BY id", (tenant_of(),)
    ) as cursor:
        rows = await cursor.fetchall()
    return "\n".join(f"{row[0]}: {row[1]}" for row in rows) or "(no notes)"


@mcp.resource("note://{id}", mime_type="application/json")
async def read_note(id: int, ctx: Context) -> Note:
    return await _note(ctx, id)


@mcp.prompt()
async def summarize(ctx: Context) -> str:
    """Ask for a summary of the tenant's notes."""
    async with database(ctx).execute(
        "SELECT text FROM notes WHERE tenant = ?", (tenant_of(),)
    ) as cursor:
        texts = [str(row[0]) for row in await cursor.fetchall()]
    return "Summarize these notes:\n" + "\n".join(f"- {text}" for text in texts)


async def _note(ctx: Context, id: int) -> Note:
    async with database(ctx).execute(
        "SELECT id, text, tenant FROM notes WHERE id = ? AND tenant = ?", (id, tenant_of())
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise ToolError(f"no note {id}")
    return Note(id=int(row[0]), text=str(row[1]), tenant=str(row[2]))


def _swatch(shade: int) -> bytes:
    """A 1x1 PNG whose colour depends on ``shade``."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    pixel = bytes([0, (shade * 40) % 256, 128, 200])
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(pixel))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    mcp.run()
