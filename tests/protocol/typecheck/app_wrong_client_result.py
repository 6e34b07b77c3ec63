"""A typed tool call whose result type disagrees with where it goes."""

from __future__ import annotations

import msgspec

from mcpbind.app import call_tool_typed
from mcpbind._client.client import ClientSession


class Note(msgspec.Struct):
    id: int
    text: str


class Hits(msgspec.Struct):
    notes: list[Note]


async def first_note(session: ClientSession) -> Note:
    return await call_tool_typed(session, "search_notes", {"query": "milk"}, result_type=Hits)  # E: arg-type expected "type[Note]"


async def count(session: ClientSession) -> None:
    hits = await call_tool_typed(session, "search_notes", {"query": "milk"}, result_type=Hits)
    print(hits.total)  # E: attr-defined
