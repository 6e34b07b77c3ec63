"""A server built with FastMCP (PyPI ``fastmcp``), whose tools return
structured output (pydantic models, dataclasses), for the typed-bindings tests.
``python fastmcp_server.py`` serves stdio."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastmcp import FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("fastmcp-inventory", version="4.2.3-test")


class Item(BaseModel):
    sku: str
    quantity: int = Field(ge=0)
    tags: list[str] = []


@dataclass
class Total:
    items: int
    value: float


@mcp.tool
def add_item(
    sku: Annotated[str, Field(pattern=r"^[A-Z]{3}-[0-9]{3}$", description="Stock keeping unit")],
    quantity: Annotated[int, Field(ge=0)] = 1,
    tags: list[str] | None = None,
) -> Item:
    """Add an item to the inventory."""
    return Item(sku=sku, quantity=quantity, tags=tags or [])


@mcp.tool
def total(prices: dict[str, float]) -> Total:
    """Total the prices given by SKU."""
    return Total(items=len(prices), value=round(sum(prices.values()), 2))


@mcp.prompt
def restock(sku: str) -> str:
    """Ask to restock an item."""
    return f"Please restock {sku}."


@mcp.resource("inventory://{sku}")
def inventory(sku: str) -> str:
    """The stock of one item."""
    return f"{sku}: 7"


if __name__ == "__main__":
    mcp.run(show_banner=False)
