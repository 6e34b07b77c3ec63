"""A notes server on the application layer: three tools with structured
output, a ``note://{id}`` resource template and a ``summarize`` prompt.

``python examples/notes_server.py`` serves stdio; ``--http --port 8000``
serves Streamable HTTP (and legacy SSE) at http://127.0.0.1:8000/mcp. The same
server on the official SDK's MCPServer is ``examples/notes_server_sdk.py``.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Annotated

import msgspec

from mcpbind import App, Context, ResourceError, ToolError

app = App("notes", "1.0", instructions="Keeps short notes; search them, read one as note://<id>.")


class Note(msgspec.Struct):
    id: int
    text: str
    tags: list[str] = []


class SearchResult(msgspec.Struct):
    notes: list[Note]
    total: int


class Store:
    def __init__(self) -> None:
        self.notes: dict[int, Note] = {}
        self.ids = itertools.count(1)


store = Store()


@app.tool(title="Add a note")
async def add_note(
    text: Annotated[str, msgspec.Meta(min_length=1)], ctx: Context, tags: list[str] = []
) -> Note:
    """Store a note.

    Args:
        text: What to remember.
        tags: Labels to find it by.
    """
    note = Note(next(store.ids), text, tags)
    store.notes[note.id] = note
    await ctx.info(f"added note {note.id}")
    return note


@app.tool(title="Search notes", annotations={"readOnlyHint": True})
def search_notes(
    query: str, limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 10
) -> SearchResult:
    """Notes whose text or tags contain the query (case-insensitive).

    Args:
        query: Text to look for.
        limit: At most this many notes.
    """
    needle = query.lower()
    found = [
        n
        for n in store.notes.values()
        if needle in n.text.lower() or any(needle in t.lower() for t in n.tags)
    ]
    return SearchResult(found[:limit], len(found))


@app.tool(title="Delete a note", annotations={"destructiveHint": True})
def delete_note(id: int) -> Note:
    """Delete a note and return it.

    Args:
        id: The note's number.
    """
    note = store.notes.pop(id, None)
    if note is None:
        raise ToolError(f"no note {id}")
    return note


@app.resource("note://{id}", mime_type="application/json")
def read_note(id: int) -> Note:
    """One note, by its number."""
    note = store.notes.get(id)
    if note is None:
        raise ResourceError(f"no note {id}")
    return note


@app.prompt(title="Summarize notes")
def summarize(topic: str = "") -> str:
    """Ask for a summary of the notes (on a topic, if given)."""
    notes = [n for n in store.notes.values() if topic.lower() in n.text.lower()]
    listing = "\n".join(f"- {n.text}" for n in notes) or "(no notes)"
    return f"Summarize these notes{f' about {topic}' if topic else ''}:\n{listing}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--http", action="store_true", help="serve Streamable HTTP instead of stdio"
    )
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    if options.http:
        app.run_http(port=options.port)
    else:
        app.run()


if __name__ == "__main__":
    main()
