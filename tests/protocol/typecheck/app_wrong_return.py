"""A tool returns what its annotation (and so its outputSchema) does not say."""

from __future__ import annotations

import msgspec

from mcpbind.app import App

app = App("typed", "1.0")


class Note(msgspec.Struct):
    id: int
    text: str


@app.tool()
def add_note(text: str) -> Note:
    return {"id": 1, "text": text}  # E: return-value


@app.tool()
def add(a: int, b: int) -> int:
    return a + b


add("1", 2)  # E: arg-type
