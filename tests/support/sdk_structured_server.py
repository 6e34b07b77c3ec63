"""A server built with the official Python SDK (PyPI ``mcp`` 2.3.0, MCPServer)
whose tools return structured output (pydantic models, TypedDicts, lists) or an
embedded resource, a prompt with arguments and a resource template, for the
typed-bindings tests.
``python sdk_structured_server.py`` serves stdio."""

from __future__ import annotations

from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import EmbeddedResource, TextResourceContents
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

server = MCPServer("sdk-structured", version="2.3.0-test")


class Forecast(BaseModel):
    city: str
    days: int = Field(ge=1, le=14)
    temperatures: list[float]
    unit: Literal["celsius", "fahrenheit"] = "celsius"
    warning: str | None = None


class Point(TypedDict):
    x: int
    y: int


@server.tool()
def get_forecast(
    city: str, days: int = 3, unit: Literal["celsius", "fahrenheit"] = "celsius"
) -> Forecast:
    """Forecast for a city."""
    return Forecast(city=city, days=days, temperatures=[20.5 + i for i in range(days)], unit=unit)


@server.tool()
def midpoint(a: Point, b: Point) -> Point:
    """The point halfway between two points."""
    return {"x": (a["x"] + b["x"]) // 2, "y": (a["y"] + b["y"]) // 2}


@server.tool()
def squares(n: int) -> list[int]:
    """The first n squares (structured output wrapped as {"result": [...]})."""
    return [i * i for i in range(n)]


@server.tool(structured_output=False)
def attach(name: str) -> list[EmbeddedResource]:
    """A note, as an embedded resource (content without an outputSchema)."""
    contents = TextResourceContents(
        uri=f"note://{name}", mime_type="text/plain", text=f"note {name}"
    )
    return [EmbeddedResource(type="resource", resource=contents)]


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Review some code."""
    return f"Review this {language} code:\n{code}"


@server.resource("greeting://{name}")
def greeting(name: str) -> str:
    """A greeting for someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run()
