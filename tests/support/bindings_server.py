"""A server of ours (mcpbind.app) whose tools carry every JSON Schema construct
``mcp-codegen server`` reads, for the typed-bindings tests.

``plan_trip`` has the schemas msgspec derives from typed Python (2020-12:
``$defs``/``$ref``, a recursive Struct, a tagged union, Literal, nullable,
tuples as ``prefixItems``, typed maps, bounds, formats, defaults);
``search`` advertises a hand-written draft-07 schema (``definitions``, a
recursive ``$ref: "#"``, ``items`` as a list, boolean ``exclusiveMinimum``,
``oneOf``, ``allOf``, ``patternProperties``, ``propertyNames``, closed
objects, type lists, ``nullable``, enums with null).

``python bindings_server.py [VARIANT]`` serves stdio. VARIANT changes the
contract the way servers drift: ``added-required`` (plan_trip gains a
required ``budget``), ``renamed`` (``destination`` becomes ``city``),
``output-changed`` (the output field ``nights`` becomes a string).
"""

from __future__ import annotations

import datetime
import sys
import uuid
from typing import Annotated, Any, Literal

import msgspec

from mcpbind.app import App, ToolError

VARIANT = sys.argv[1] if len(sys.argv) > 1 else "base"

app = App("bindings-kitchen", "1.0.0")


class Node(msgspec.Struct, kw_only=True):
    """A tree of stops: recursive through $ref."""

    name: str
    children: list[Node] = []


class Flight(msgspec.Struct, tag_field="mode", tag="flight", kw_only=True):
    number: Annotated[str, msgspec.Meta(pattern=r"^[A-Z]{2}[0-9]+$")]


class Train(msgspec.Struct, tag_field="mode", tag="train", kw_only=True):
    line: str
    seats: Annotated[int, msgspec.Meta(ge=1, le=8)] = 1


class Trip(msgspec.Struct, kw_only=True):
    """The structured result of plan_trip."""

    destination: str
    nights: int
    leg: Flight | Train
    when: datetime.datetime
    booking: uuid.UUID
    window: tuple[int, int]
    tags: dict[str, int]
    stops: Node
    note: str | None = None


class TripText(msgspec.Struct, kw_only=True):
    """output-changed: nights is a string."""

    destination: str
    nights: str
    leg: Flight | Train
    when: datetime.datetime
    booking: uuid.UUID
    window: tuple[int, int]
    tags: dict[str, int]
    stops: Node
    note: str | None = None


BOOKING = uuid.UUID("12345678-1234-5678-1234-567812345678")


def _trip(
    destination: str,
    nights: int,
    leg: Flight | Train,
    when: datetime.datetime,
    window: tuple[int, int],
    tags: dict[str, int],
    stops: Node,
    note: str | None,
) -> Trip:
    return Trip(
        destination=destination,
        nights=nights,
        leg=leg,
        when=when,
        booking=BOOKING,
        window=window,
        tags=tags,
        stops=stops,
        note=note,
    )


if VARIANT == "renamed":

    @app.tool()
    def plan_trip(
        city: Annotated[str, msgspec.Meta(min_length=1, max_length=40)],
        leg: Flight | Train,
        when: datetime.datetime,
        stops: Node,
        nights: Annotated[int, msgspec.Meta(ge=1, le=30)] = 2,
        window: tuple[int, int] = (9, 17),
        tags: dict[str, int] = {},  # noqa: B006  (the schema's default)
        note: str | None = None,
        pace: Literal["slow", "fast"] = "slow",
    ) -> Trip:
        """Plan a trip (the destination is now called city)."""
        return _trip(city, nights, leg, when, window, tags, stops, note)

elif VARIANT == "added-required":

    @app.tool()
    def plan_trip(
        destination: Annotated[str, msgspec.Meta(min_length=1, max_length=40)],
        leg: Flight | Train,
        when: datetime.datetime,
        stops: Node,
        budget: int,
        nights: Annotated[int, msgspec.Meta(ge=1, le=30)] = 2,
        window: tuple[int, int] = (9, 17),
        tags: dict[str, int] = {},  # noqa: B006
        note: str | None = None,
        pace: Literal["slow", "fast"] = "slow",
    ) -> Trip:
        """Plan a trip within a budget."""
        return _trip(destination, nights, leg, when, window, tags, stops, note)

elif VARIANT == "output-changed":

    @app.tool()
    def plan_trip(
        destination: Annotated[str, msgspec.Meta(min_length=1, max_length=40)],
        leg: Flight | Train,
        when: datetime.datetime,
        stops: Node,
        nights: Annotated[int, msgspec.Meta(ge=1, le=30)] = 2,
        window: tuple[int, int] = (9, 17),
        tags: dict[str, int] = {},  # noqa: B006
        note: str | None = None,
        pace: Literal["slow", "fast"] = "slow",
    ) -> TripText:
        """Plan a trip."""
        trip = _trip(destination, nights, leg, when, window, tags, stops, note)
        return msgspec.convert({**msgspec.to_builtins(trip), "nights": str(nights)}, TripText)

else:

    @app.tool()
    def plan_trip(
        destination: Annotated[str, msgspec.Meta(min_length=1, max_length=40)],
        leg: Flight | Train,
        when: datetime.datetime,
        stops: Node,
        nights: Annotated[int, msgspec.Meta(ge=1, le=30)] = 2,
        window: tuple[int, int] = (9, 17),
        tags: dict[str, int] = {},  # noqa: B006
        note: str | None = None,
        pace: Literal["slow", "fast"] = "slow",
    ) -> Trip:
        """Plan a trip."""
        return _trip(destination, nights, leg, when, window, tags, stops, note)


SEARCH_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {
        "range": {
            "type": "object",
            "properties": {
                "low": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                "high": {"type": "number", "maximum": 100},
            },
            "required": ["low"],
            "additionalProperties": False,
        },
        "term": {"type": "string", "minLength": 1, "maxLength": 64},
    },
    "properties": {
        "query": {"$ref": "#/definitions/term", "description": "What to look for."},
        "point": {
            "type": "array",
            "items": [{"type": "number"}, {"type": "number"}],
            "additionalItems": False,
            "minItems": 2,
        },
        "price": {"$ref": "#/definitions/range"},
        "sort": {"enum": ["asc", "desc", None]},
        "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50, "default": 10},
        "match": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "exact"}, "value": {"type": "string"}},
                    "required": ["kind", "value"],
                },
                {
                    "type": "object",
                    "properties": {
                        "kind": {"const": "fuzzy"},
                        "distance": {"type": "integer", "multipleOf": 1, "minimum": 0},
                    },
                    "required": ["kind"],
                },
            ]
        },
        "labels": {
            "type": "object",
            "patternProperties": {"^[a-z]+$": {"type": "string"}},
            "additionalProperties": False,
        },
        "weights": {
            "type": "object",
            "propertyNames": {"pattern": "^w[0-9]$"},
            "additionalProperties": {"type": "number"},
        },
        "filter": {
            "allOf": [
                {"type": "object", "properties": {"field": {"type": "string"}}},
                {"properties": {"op": {"enum": ["eq", "ne"]}}, "required": ["field", "op"]},
            ]
        },
        "subquery": {"$ref": "#", "description": "A nested search (recursive)."},
        "since": {"type": "string", "format": "date"},
        "fields": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "comment": {"type": "string", "nullable": True},
    },
    "required": ["query"],
    "additionalProperties": False,
}


class Hits(msgspec.Struct, kw_only=True):
    query: str
    count: int
    echoed: dict[str, Any]


@app.tool(input_schema=SEARCH_SCHEMA)
def search(
    query: str,
    point: Any = None,
    price: Any = None,
    sort: Any = None,
    limit: Any = 10,
    match: Any = None,
    labels: Any = None,
    weights: Any = None,
    filter: Any = None,
    subquery: Any = None,
    since: Any = None,
    fields: Any = None,
    comment: Any = None,
) -> Hits:
    """Search with a draft-07 schema: every argument given is echoed back."""
    given = {
        "point": point,
        "price": price,
        "sort": sort,
        "match": match,
        "labels": labels,
        "weights": weights,
        "filter": filter,
        "subquery": subquery,
        "since": since,
        "fields": fields,
        "comment": comment,
    }
    echoed = {k: v for k, v in given.items() if v is not None}
    echoed["limit"] = limit
    return Hits(query=query, count=len(echoed), echoed=echoed)


class Weather(msgspec.Struct, kw_only=True):
    temperature: float


@app.tool()
def broken_weather() -> Weather:
    """Answers structured content that breaks its own outputSchema."""
    return {"temperature": "hot"}  # type: ignore[return-value]


@app.tool()
def fail(reason: str) -> str:
    """Always fails with a tool execution error."""
    raise ToolError(f"refused: {reason}")


@app.prompt()
def greet(name: str, mood: str = "cheerful") -> str:
    """Greet someone."""
    return f"Say hello to {name}, {mood}."


@app.resource("note://{id}", name="note")
def note(id: str) -> str:
    """A note."""
    return f"note {id}"


@app.resource("files://{+path}", name="file")
def file(path: str) -> str:
    """A file, by a path that may contain slashes."""
    return f"file {path}"


if __name__ == "__main__":
    app.run()
