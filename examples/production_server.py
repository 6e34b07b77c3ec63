"""A production-style server on the application layer.

- a lifespan opens a real SQLite database through an async driver (aiosqlite)
  and closes it on every way out; functions reach it typed, as ``ctx.lifespan.db``;
- two middlewares: structured logging of every call, and a rate limit per client;
- the tenant comes from the ``X-Tenant`` HTTP header (``public`` off HTTP);
- per-session state: the notes added in this session (``recent``);
- an image and a file in a result (``note_card``), sent as each revision can take them;
- visibility by tag: the ``admin`` tools are hidden until a session unlocks them;
- a task-capable tool (``export_notes``): a task for 2025-11-25 clients that ask
  for one and for 2026-07-28 clients that declare the tasks extension, an
  ordinary call for the others.

``python examples/production_server.py`` serves stdio; ``MCP_TRANSPORT=http
MCP_PORT=8000`` serves Streamable HTTP at http://127.0.0.1:8000/mcp (see the
settings table in docs/guides/servers.md). ``NOTES_DB`` names the database
file (default: notes.db in the working directory); ``NOTES_VERSIONS`` limits
the protocol revisions served (comma-separated).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import aiosqlite
import msgspec

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind.app import (
    App,
    Content,
    Context,
    File,
    Image,
    RateLimit,
    StructuredLogging,
    ToolError,
)


@dataclass
class State:
    """What the lifespan gives every function."""

    db: aiosqlite.Connection


class Note(msgspec.Struct):
    id: int
    text: str
    tenant: str


class Recent(msgspec.Struct):
    ids: list[int]


@contextlib.asynccontextmanager
async def lifespan(app: App[State]) -> AsyncIterator[State]:
    path = Path(os.environ.get("NOTES_DB", "notes.db"))
    if not path.parent.is_dir():
        # Said before aiosqlite tries: its error would not name the path
        # ("unable to open database file").
        raise FileNotFoundError(f"no directory {path.parent} for the database")
    db = await aiosqlite.connect(path)
    try:
        await db.execute(
            "CREATE TABLE IF NOT EXISTS notes"
            " (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, text TEXT NOT NULL)"
        )
        await db.commit()
        yield State(db)
    finally:
        await db.close()


versions = os.environ.get("NOTES_VERSIONS")
app = App(
    "production-notes",
    "1.0",
    lifespan=lifespan,
    middleware=[StructuredLogging(), RateLimit(600, per=60.0)],
    extensions=[Tasks()],
    versions=versions.split(",") if versions else None,
)
app.disable(tags={"admin"})


def tenant_of(ctx: Context[State]) -> str:
    headers = ctx.headers
    return headers.get("x-tenant", "public") if headers is not None else "public"


@app.tool(title="Add a note")
async def add_note(text: Annotated[str, msgspec.Meta(min_length=1)], ctx: Context[State]) -> Note:
    """Store a note for the caller's tenant."""
    db = ctx.lifespan.db
    tenant = tenant_of(ctx)
    cursor = await db.execute("INSERT INTO notes (tenant, text) VALUES (?, ?)", (tenant, text))
    await db.commit()
    note_id = cursor.lastrowid
    assert note_id is not None
    recent = await ctx.session.get("recent", Recent) or Recent([])
    recent.ids.append(note_id)
    await ctx.session.set("recent", recent)
    return Note(note_id, text, tenant)


@app.tool(title="Notes added in this session", annotations={"readOnlyHint": True})
async def recent_notes(ctx: Context[State]) -> list[int]:
    """The ids of the notes this session added (a 2026-07-28 request has no session)."""
    recent = await ctx.session.get("recent", Recent)
    return recent.ids if recent is not None else []


@app.tool(title="A note as a card", annotations={"readOnlyHint": True})
async def note_card(id: int, ctx: Context[State]) -> list[Content]:
    """The note as text, a picture, and a CSV file."""
    note = await _note(ctx, id)
    rows = io.StringIO()
    csv.writer(rows).writerows([["id", "tenant", "text"], [note.id, note.tenant, note.text]])
    return [
        f"Note {note.id}: {note.text}",
        Image(_swatch(len(note.text))),
        File(rows.getvalue().encode(), name=f"note-{note.id}.csv"),
    ]


@app.tool(title="Unlock the admin tools for this session")
def unlock_admin(code: str, ctx: Context[State]) -> str:
    if code != os.environ.get("NOTES_ADMIN_CODE", "letmein"):
        raise ToolError("wrong code")
    if ctx.request_context.stateless:
        raise ToolError("a 2026-07-28 request has no session to unlock")
    app.enable(tags={"admin"}, session=ctx)
    return "admin tools unlocked"


@app.tool(title="Delete every note of the tenant", tags={"admin"})
async def purge_notes(ctx: Context[State]) -> int:
    db = ctx.lifespan.db
    cursor = await db.execute("DELETE FROM notes WHERE tenant = ?", (tenant_of(ctx),))
    await db.commit()
    return cursor.rowcount


@app.tool(title="Export the tenant's notes (may run as a task)", task_support="optional")
async def export_notes(ctx: Context[State]) -> str:
    await asyncio.sleep(0.05)  # a long export, as far as the client knows
    async with ctx.lifespan.db.execute(
        "SELECT id, text FROM notes WHERE tenant = ? ORDER BY id", (tenant_of(ctx),)
    ) as cursor:
        rows = await cursor.fetchall()
    return "\n".join(f"{row[0]}: {row[1]}" for row in rows) or "(no notes)"


@app.resource("note://{id}", mime_type="application/json")
async def read_note(id: int, ctx: Context[State]) -> Note:
    return await _note(ctx, id)


@app.prompt()
async def summarize(ctx: Context[State]) -> str:
    """Ask for a summary of the tenant's notes."""
    async with ctx.lifespan.db.execute(
        "SELECT text FROM notes WHERE tenant = ?", (tenant_of(ctx),)
    ) as cursor:
        texts = [str(row[0]) for row in await cursor.fetchall()]
    return "Summarize these notes:\n" + "\n".join(f"- {text}" for text in texts)


async def _note(ctx: Context[State], id: int) -> Note:
    async with ctx.lifespan.db.execute(
        "SELECT id, text, tenant FROM notes WHERE id = ? AND tenant = ?", (id, tenant_of(ctx))
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise ToolError(f"no note {id}")
    return Note(int(row[0]), str(row[1]), str(row[2]))


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
    app.run()
