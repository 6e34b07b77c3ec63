"""An app proxying server-everything (stdio) under the prefix ``everything``, served over stdio."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App

EVERYTHING = (
    Path(__file__).resolve().parents[1]
    / "peers"
    / "node_modules"
    / ".bin"
    / "mcp-server-everything"
)

app = App("front")


@app.tool()
def own() -> str:
    """A tool of the front's own, beside the proxied ones."""
    return "mine"


app.proxy(
    StdioServerParameters(str(EVERYTHING), ["stdio"], stderr=asyncio.subprocess.DEVNULL),
    prefix="everything",
)

if __name__ == "__main__":
    app.run("stdio")
    sys.exit(0)
